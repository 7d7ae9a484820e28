import Foundation
#if canImport(Security)
import Security
#endif

/// Small secrets the SDK keeps across launches: the device token and the id of the attested App Attest key.
/// ``KeychainStore`` on Apple platforms, ``InMemoryStore`` elsewhere (Linux tests) or in tests.
public protocol TollgateSecureStore: Sendable {
    func data(_ account: String) -> Data?
    func set(_ data: Data, _ account: String)
    func delete(_ account: String)
    /// Reads `account`: nil when there is no such item; throws ``SecureStoreError`` when the store cannot answer (a
    /// Keychain locked before the first unlock, an interrupted call), so that a transient failure is never taken for
    /// "no key" (which would attest a new device identity). The default calls ``data(_:)``.
    func read(_ account: String) throws -> Data?
    /// Writes `data`; throws ``SecureStoreError`` when it was not stored. The default calls ``set(_:_:)``.
    func write(_ data: Data, _ account: String) throws
}

extension TollgateSecureStore {
    public func read(_ account: String) throws -> Data? {
        data(account)
    }

    public func write(_ data: Data, _ account: String) throws {
        set(data, account)
    }
}

/// A secure store could not read or write (the Keychain's `OSStatus`).
public struct SecureStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public let status: Int32
    public let operation: String

    public init(status: Int32, operation: String) {
        self.status = status
        self.operation = operation
    }

    public var description: String { "Keychain \(operation) failed (OSStatus \(status))" }
}

/// Keeps values in memory only (tests; platforms without a Keychain). Nothing survives the process.
public final class InMemoryStore: TollgateSecureStore, @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: Data] = [:]

    public init() {}

    public func data(_ account: String) -> Data? {
        lock.lock()
        defer { lock.unlock() }
        return values[account]
    }

    public func set(_ data: Data, _ account: String) {
        lock.lock()
        values[account] = data
        lock.unlock()
    }

    public func delete(_ account: String) {
        lock.lock()
        values[account] = nil
        lock.unlock()
    }
}

#if canImport(Security)
/// Generic-password items of this app in the Keychain (service `dev.tollgate`), readable after the first unlock and
/// never migrated to another device or restored from a backup onto another phone
/// (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`): an App Attest key lives in this device's Secure Enclave, so its
/// id means nothing elsewhere, and a device token belongs to that key.
public struct KeychainStore: TollgateSecureStore {
    public let service: String

    public init(service: String = "dev.tollgate") {
        self.service = service
    }

    private func query(_ account: String) -> [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
    }

    public func data(_ account: String) -> Data? {
        (try? read(account)) ?? nil
    }

    public func set(_ data: Data, _ account: String) {
        try? write(data, account)
    }

    public func read(_ account: String) throws -> Data? {
        var request = query(account)
        request[kSecReturnData as String] = true
        request[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(request as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess else { throw SecureStoreError(status: status, operation: "read") }
        return result as? Data
    }

    public func write(_ data: Data, _ account: String) throws {
        let attributes: [String: Any] = [kSecValueData as String: data]
        let status = SecItemUpdate(query(account) as CFDictionary, attributes as CFDictionary)
        if status == errSecSuccess { return }
        guard status == errSecItemNotFound else { throw SecureStoreError(status: status, operation: "update") }
        var item = query(account)
        item[kSecValueData as String] = data
        item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        let added = SecItemAdd(item as CFDictionary, nil)
        guard added == errSecSuccess else { throw SecureStoreError(status: added, operation: "add") }
    }

    public func delete(_ account: String) {
        _ = SecItemDelete(query(account) as CFDictionary)
    }
}
#endif

extension TollgateSecureStore {
    func string(_ account: String) -> String? {
        data(account).map { String(decoding: $0, as: UTF8.self) }
    }

    func setString(_ value: String, _ account: String) {
        set(Data(value.utf8), account)
    }
}

/// The store the SDK uses by default: the Keychain where there is one, else memory.
func defaultSecureStore() -> TollgateSecureStore {
    #if canImport(Security)
    return KeychainStore()
    #else
    return InMemoryStore()
    #endif
}
