import Foundation

/// Where a node keeps its files: the database, the identity key and the photos.
///
/// ```
/// DIR/identity.key       Ed25519 private key, mode 0600
/// DIR/continuum.sqlite   the SQLite store (WAL mode: plus -wal and -shm files)
/// DIR/photos/ab/ab…      photos, named by their SHA-256, sharded by its first byte
/// DIR/photos/tmp/        partial files, renamed into place once complete and synced
/// ```
public struct DataDirectory: Sendable, Hashable {
    public let url: URL

    public init(url: URL) { self.url = url.standardizedFileURL }

    /// `explicit` if given, else `$CONTINUUM_DATA`, else `$XDG_DATA_HOME/continuum-node`,
    /// else `$HOME/.local/share/continuum-node`.
    public static func resolve(explicit: String?, environment: [String: String]) -> DataDirectory {
        func nonEmpty(_ key: String) -> String? { environment[key].flatMap { $0.isEmpty ? nil : $0 } }
        if let explicit, !explicit.isEmpty { return DataDirectory(url: URL(fileURLWithPath: explicit)) }
        if let path = nonEmpty("CONTINUUM_DATA") { return DataDirectory(url: URL(fileURLWithPath: path)) }
        let base =
            nonEmpty("XDG_DATA_HOME")
            ?? ((nonEmpty("HOME") ?? NSHomeDirectory()) + "/.local/share")
        return DataDirectory(url: URL(fileURLWithPath: base).appendingPathComponent("continuum-node"))
    }

    public var path: String { url.path }
    public var identityURL: URL { url.appendingPathComponent("identity.key") }
    public var databaseURL: URL { url.appendingPathComponent("continuum.sqlite") }
    public var photosURL: URL { url.appendingPathComponent("photos") }

    /// Creates the directory (mode 0700) if it does not exist.
    public func create() throws(StoreError) {
        do {
            try FileManager.default.createDirectory(
                at: url,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw StoreError(.io, "cannot create data directory \(path): \(error.localizedDescription)")
        }
    }
}
