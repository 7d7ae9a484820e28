# The iOS half of @tollgate/react-native: the native module TollgateNative (ios/), which delegates the device-token
# lifecycle (App Attest, Keychain, revocation) and HTTP streaming to the Tollgate Swift SDK, the TollgateSDK pod.
# Autolinking finds this podspec at the package root; `pod install` resolves TollgateSDK from the CocoaPods trunk with
# no line in the app's Podfile.
require 'json'

package = JSON.parse(File.read(File.join(__dir__, 'package.json')))
git_url = ENV['TOLLGATE_GIT_URL'] || 'https://github.com/tollgate-dev/tollgate.git'

Pod::Spec.new do |s|
  s.name         = 'TollgateReactNative'
  s.version      = package['version']
  s.summary      = package['description']
  s.homepage     = git_url.sub(/\.git\z/, '')
  s.license      = { :type => package['license'] }
  s.author       = 'Tollgate'
  s.platforms    = { :ios => '15.0' }
  # Installed from npm, CocoaPods uses the package folder (autolinking's :path); the git source is for `pod spec lint`.
  s.source       = { :git => git_url, :tag => s.version.to_s }
  s.source_files = 'ios/**/*.{h,m,mm,swift}'
  # The Swift is written to compile in Swift 6 mode; language mode 5 keeps React's unannotated headers quiet.
  s.swift_version = '5.9'
  s.dependency 'TollgateSDK', "~> #{package['version'].split('.').first(2).join('.')}"
  if respond_to?(:install_modules_dependencies, true)
    # React Native >= 0.71: React-Core plus, with the New Architecture, codegen of NativeTollgate.ts (TollgateNativeSpec).
    install_modules_dependencies(s)
  else
    s.dependency 'React-Core'
  end
end
