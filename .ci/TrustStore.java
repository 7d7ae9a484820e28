// Writes a Java trust store (PKCS12, certificates stored unencrypted so that Java reads them without a password, as
// its own cacerts) from a PEM bundle of CA certificates. Run by .ci/maven-tool with the unpacked JDK's single-file
// source launcher: java .ci/TrustStore.java <bundle.pem> <cacerts>, with -Dkeystore.pkcs12.certProtectionAlgorithm=NONE
// and -Dkeystore.pkcs12.macAlgorithm=NONE.
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;

public class TrustStore {
  public static void main(String[] args) throws Exception {
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    int count = 0;
    try (InputStream in = new FileInputStream(args[0])) {
      for (Certificate certificate : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        store.setCertificateEntry("ca-" + count++, certificate);
      }
    }
    if (count == 0) throw new IllegalStateException("no certificate in " + args[0]);
    try (OutputStream out = new FileOutputStream(args[1])) {
      store.store(out, "changeit".toCharArray());
    }
    System.err.println("TrustStore: " + count + " certificates");
  }
}
