import ContinuumStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive lock on a data directory, held for the life of a running node.
///
/// It is an `flock` on `node.lock`, so the kernel releases it when the process exits, even after a crash.
public final class DataDirectoryLock: Sendable {
    private let descriptor: Int32
    public let url: URL

    /// Takes the lock, or throws a message naming the process that holds it.
    public init(_ directory: DataDirectory) throws {
        url = directory.url.appendingPathComponent("node.lock")
        let fd = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw StoreError(.io, "cannot open \(url.path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(fd, &buffer, buffer.count, 0)
            close(fd)
            let pid =
                count > 0
                ? String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                : "?"
            throw StoreError(
                .invalidInput,
                "another continuum-node is already running on \(directory.path) (pid \(pid)); stop it first, "
                    + "or give this one another --data directory"
            )
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        descriptor = fd
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
