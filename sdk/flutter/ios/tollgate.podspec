# The iOS half of the Flutter plugin: serves the MethodChannel dev.tollgate/native with the Tollgate Swift SDK, which
# owns the device-token lifecycle (App Attest, Keychain, revocation). The SDK is the TollgateSDK pod, whose podspec is at
# the repository root (TollgateSDK.podspec, sources in sdk/ios/Sources/TollgateSDK). `pod install` resolves it from the
# CocoaPods trunk; before it is published there, add it to the app's ios/Podfile by git tag:
#   pod 'TollgateSDK', :git => 'https://github.com/tollgate-dev/tollgate.git', :tag => '1.2.0'
# Flutter installs this plugin pod from the package folder (the Podfile's :path); the git source is for `pod spec lint`.
git_url = ENV['TOLLGATE_GIT_URL'] || 'https://github.com/tollgate-dev/tollgate.git'

Pod::Spec.new do |s|
  s.name             = 'tollgate'
  s.version          = '1.2.0'
  s.summary          = 'Tollgate for Flutter: the native device-token lifecycle (App Attest) for the Dart SDK.'
  s.homepage         = git_url.sub(/\.git\z/, '')
  s.license          = { :type => 'Apache-2.0' }
  s.author           = 'Tollgate'
  s.source           = { :git => git_url, :tag => s.version.to_s }
  s.source_files     = 'Classes/**/*'
  s.dependency 'Flutter'
  s.dependency 'TollgateSDK', '~> 1.2'
  s.platform         = :ios, '15.0'
  # The plugin's Swift is written to compile in Swift 6 mode; language mode 5 keeps Flutter's unannotated headers quiet.
  s.swift_version    = '5.9'
  s.pod_target_xcconfig = { 'DEFINES_MODULE' => 'YES' }
end
