import ContinuumCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads and creates the identity key file.
///
/// The file is two lines: `continuum-node identity v1`, then the 32-byte Ed25519 seed as 64 hex digits.
/// It is created with mode 0600 and refused when anyone but its owner can read or write it.
public enum IdentityFile {
    static let header = "continuum-node identity v1"

    /// Loads the identity, creating a new one if the file does not exist.
    /// - Returns: the identity, and whether it was created now.
    public static func loadOrCreate(at url: URL) throws(StoreError) -> (NodeIdentity, created: Bool) {
        if FileManager.default.fileExists(atPath: url.path) { return (try load(at: url), false) }
        let identity = NodeIdentity.generate()
        try write(identity, to: url)
        return (identity, true)
    }

    /// Loads an existing identity.
    public static func load(at url: URL) throws(StoreError) -> NodeIdentity {
        let path = url.path
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw StoreError(.identity, "cannot read identity key \(path): \(String(cString: strerror(errno)))")
        }
        let mode = info.st_mode & 0o777
        if mode & 0o077 != 0 {
            throw StoreError(
                .identity,
                "identity key \(path) is accessible by other users (mode \(String(mode, radix: 8))); "
                    + "fix it with: chmod 600 '\(path)'"
            )
        }
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw corrupt(path, "it is not readable text")
        }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        guard lines.count == 2, lines[0] == header else {
            throw corrupt(path, "expected the line '\(header)' and a line of 64 hex digits")
        }
        // A seed that makes no key is a corrupt file: its error is replaced by the one below, which says what to do.
        guard lines[1].utf8.count == 64, let seed = Hex.decode(lines[1]),
            let identity = try? NodeIdentity(seed: seed)
        else {
            throw corrupt(path, "the key line is not 64 hex digits")
        }
        return identity
    }

    private static func corrupt(_ path: String, _ why: String) -> StoreError {
        StoreError(
            .identity,
            "identity key \(path) is corrupt (\(why)); restore it from a backup, or move it aside and run "
                + "'continuum-node init' to make a new identity (new records will then come from a new author)"
        )
    }

    /// Writes the identity atomically: a temp file with mode 0600, fsync, rename, fsync of the directory.
    static func write(_ identity: NodeIdentity, to url: URL) throws(StoreError) {
        let text = header + "\n" + Hex.encode(identity.privateKey.rawRepresentation) + "\n"
        let temp = url.path + ".tmp-\(getpid())"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw StoreError(.io, "cannot create \(temp): \(String(cString: strerror(errno)))")
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        do {
            try handle.write(contentsOf: Data(text.utf8))
            try handle.synchronize()
        } catch {
            // The write's error is the one reported; closing the file it failed on changes nothing.
            try? handle.close()
            unlink(temp)
            throw StoreError(.io, "cannot write identity key \(url.path): \(error.localizedDescription)")
        }
        // Synced already: the close cannot lose what was written.
        try? handle.close()
        guard rename(temp, url.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temp)
            throw StoreError(.io, "cannot write identity key \(url.path): \(reason)")
        }
        FileSync.directory(url.deletingLastPathComponent())
    }
}

/// fsync helpers.
enum FileSync {
    /// Makes a rename in `directory` durable.
    static func directory(_ directory: URL) {
        let fd = open(directory.path, O_RDONLY)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}
