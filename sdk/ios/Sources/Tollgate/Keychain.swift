import Foundation
import Security

/// Generic-password items of this app in the Keychain (service `dev.tollgate`), readable after the first unlock and
/// never migrated to another device (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`): an App Attest key lives in
/// this device's Secure Enclave, so its id means nothing elsewhere.
struct Keychain: Sendable {
    let service: String

    init(service: String = "dev.tollgate") {
        self.service = service
    }

    private func query(_ account: String) -> [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
    }

    func data(_ account: String) -> Data? {
        var request = query(account)
        request[kSecReturnData as String] = true
        request[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(request as CFDictionary, &result)
        guard status == errSecSuccess else { return nil }
        return result as? Data
    }

    func string(_ account: String) -> String? {
        data(account).map { String(decoding: $0, as: UTF8.self) }
    }

    func set(_ data: Data, _ account: String) {
        let attributes: [String: Any] = [kSecValueData as String: data]
        let status = SecItemUpdate(query(account) as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            var item = query(account)
            item[kSecValueData as String] = data
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            _ = SecItemAdd(item as CFDictionary, nil)
        }
    }

    func set(_ string: String, _ account: String) {
        set(Data(string.utf8), account)
    }

    func delete(_ account: String) {
        _ = SecItemDelete(query(account) as CFDictionary)
    }
}
