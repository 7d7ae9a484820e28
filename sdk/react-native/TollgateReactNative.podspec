# The iOS half of @tollgate/react-native: the native module TollgateNative (ios/), which delegates the device-token
# lifecycle (App Attest, Keychain, revocation) to the Tollgate Swift SDK. Autolinking finds this podspec at the package
# root. The SDK comes as the TollgateSDK pod from sdk/ios; until it is published, add it to the app's ios/Podfile:
#   pod 'TollgateSDK', :path => '<path to tollgate>/sdk/ios'
require 'json'

package = JSON.parse(File.read(File.join(__dir__, 'package.json')))

Pod::Spec.new do |s|
  s.name         = 'TollgateReactNative'
  s.version      = package['version']
  s.summary      = package['description']
  s.homepage     = 'https://example.com' # placeholder: set to the repository's address when the package is published
  s.license      = package['license']
  s.author       = 'Tollgate'
  s.platforms    = { :ios => '15.0' }
  s.source       = { :path => '.' }
  s.source_files = 'ios/**/*.{h,m,mm,swift}'
  # The Swift is written to compile in Swift 6 mode; language mode 5 keeps React's unannotated headers quiet.
  s.swift_version = '5.9'
  s.dependency 'TollgateSDK', '~> 1.2'
  if respond_to?(:install_modules_dependencies, true)
    # React Native >= 0.71: React-Core plus what the New Architecture needs when it is enabled.
    install_modules_dependencies(s)
  else
    s.dependency 'React-Core'
  end
end
