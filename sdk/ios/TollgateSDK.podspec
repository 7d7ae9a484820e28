# The Swift SDK as a CocoaPod, for projects that use CocoaPods (the Flutter plugin in ../flutter/ios and the React Native
# module in ../react-native depend on it). SwiftPM users depend on Package.swift instead. The pod is named TollgateSDK
# (module TollgateSDK) so that it never collides with the Flutter plugin's own pod and module, `tollgate`, on a
# case-insensitive file system.
Pod::Spec.new do |s|
  s.name             = 'TollgateSDK'
  s.version          = '1.2.0'
  s.summary          = 'Call AI providers through a Tollgate gateway without shipping a provider key.'
  s.homepage         = 'https://example.com' # placeholder: set to the repository's address when the pod is published
  s.license          = { :type => 'MIT' }
  s.author           = 'Tollgate'
  s.source           = { :path => '.' }
  s.swift_version    = '6.0'
  s.ios.deployment_target = '15.0'
  s.osx.deployment_target = '12.0'
  s.source_files     = 'Sources/Tollgate/**/*.swift'
  # Apple's privacy manifest (required-reason APIs: UserDefaults, CA92.1), in a resource bundle as Apple recommends.
  s.resource_bundles = { 'TollgateSDK_Privacy' => ['Sources/Tollgate/PrivacyInfo.xcprivacy'] }
  s.frameworks       = 'DeviceCheck', 'Security', 'CryptoKit'
  s.module_name      = 'TollgateSDK'
end
