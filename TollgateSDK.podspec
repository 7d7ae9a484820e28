# The Tollgate SDK for Apple platforms as a CocoaPod, from this repository (the sources are in sdk/ios; SwiftPM users
# depend on the root Package.swift instead). `pod 'TollgateSDK', '~> 1.2'` once it is on the CocoaPods trunk (`pod trunk
# push TollgateSDK.podspec` at a release tag), or before that
#   pod 'TollgateSDK', :git => 'https://github.com/tollgate-dev/tollgate.git', :tag => '1.2.0'
# The Flutter plugin (sdk/flutter/ios) and the React Native module (sdk/react-native) depend on it. Pod and module are
# named TollgateSDK, so that they never collide with the Flutter plugin's own pod and module, `tollgate`, on a
# case-insensitive file system, and so that no type in the module is named like it.
#
# TOLLGATE_GIT_URL overrides the repository address (forks, mirrors); `npm run sdk:package` writes a copy with it.
Pod::Spec.new do |s|
  s.name             = 'TollgateSDK'
  s.version          = '1.2.0'
  s.summary          = 'Call AI providers through a Tollgate gateway without shipping a provider key.'
  s.description      = 'Device attestation (App Attest), the Tollgate headers, typed errors, streams, realtime sessions, ' \
                       'signed-in users and remaining quota for apps that call AI providers through a Tollgate gateway.'
  s.homepage         = (ENV['TOLLGATE_GIT_URL'] || 'https://github.com/tollgate-dev/tollgate.git').sub(/\.git\z/, '')
  s.license          = { :type => 'Apache-2.0', :file => 'LICENSE' }
  s.author           = 'Tollgate'
  s.source           = { :git => ENV['TOLLGATE_GIT_URL'] || 'https://github.com/tollgate-dev/tollgate.git', :tag => s.version.to_s }
  s.swift_version    = '6.0'
  # Every platform Package.swift declares.
  s.ios.deployment_target      = '15.0'
  s.osx.deployment_target      = '12.0'
  s.tvos.deployment_target     = '15.0'
  s.watchos.deployment_target  = '9.0'
  s.visionos.deployment_target = '1.0'
  s.source_files     = 'sdk/ios/Sources/TollgateSDK/**/*.swift'
  # Apple's privacy manifest (required-reason APIs: UserDefaults, CA92.1), in a resource bundle as Apple recommends.
  s.resource_bundles = { 'TollgateSDK_Privacy' => ['sdk/ios/Sources/TollgateSDK/PrivacyInfo.xcprivacy'] }
  s.frameworks       = 'Foundation', 'Security'
  s.ios.weak_frameworks      = 'DeviceCheck', 'CryptoKit'
  s.osx.weak_frameworks      = 'DeviceCheck', 'CryptoKit'
  s.tvos.weak_frameworks     = 'DeviceCheck', 'CryptoKit'
  s.watchos.weak_frameworks  = 'DeviceCheck', 'CryptoKit'
  s.visionos.weak_frameworks = 'DeviceCheck', 'CryptoKit'
  s.module_name      = 'TollgateSDK'
end
