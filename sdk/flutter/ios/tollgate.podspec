# The iOS half of the Flutter plugin: serves the MethodChannel dev.tollgate/native with the Tollgate Swift SDK, which
# owns the device-token lifecycle (App Attest, Keychain, revocation). The SDK comes as the TollgateSDK pod from sdk/ios;
# until it is published, add it to the app's ios/Podfile:  pod 'TollgateSDK', :path => '<path to tollgate>/sdk/ios'
Pod::Spec.new do |s|
  s.name             = 'tollgate'
  s.version          = '1.2.0'
  s.summary          = 'Tollgate for Flutter: the native device-token lifecycle (App Attest) for the Dart SDK.'
  s.homepage         = 'https://example.com' # placeholder: set to the repository's address when the pod is published
  s.license          = { :type => 'MIT' }
  s.author           = 'Tollgate'
  s.source           = { :path => '.' }
  s.source_files     = 'Classes/**/*'
  s.dependency 'Flutter'
  s.dependency 'TollgateSDK', '~> 1.2'
  s.platform         = :ios, '15.0'
  # The plugin's Swift is written to compile in Swift 6 mode; language mode 5 keeps Flutter's unannotated headers quiet.
  s.swift_version    = '5.9'
  s.pod_target_xcconfig = { 'DEFINES_MODULE' => 'YES' }
end
