import Foundation

/// Writes `data` to `url` readable by this user only, replacing what was there: a temporary file beside it is
/// created with mode 0600 by `open` itself (never wider, whatever the umask), written, synced, and renamed into
/// place, as the identity key is.
func writePrivate(_ data: Data, to url: URL) throws {
    let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID())")
    let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else {
        throw APIStartError(description: "cannot create \(temporary.path): \(String(cString: strerror(errno)))")
    }
    let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    do {
        try handle.write(contentsOf: data)
        try handle.synchronize()
    } catch {
        // The write's error is the one reported; closing the file it failed on changes nothing.
        try? handle.close()
        unlink(temporary.path)
        throw APIStartError(description: "cannot write \(url.path): \(error.localizedDescription)")
    }
    // Synced already: the close cannot lose what was written.
    try? handle.close()
    guard rename(temporary.path, url.path) == 0 else {
        let reason = String(cString: strerror(errno))
        unlink(temporary.path)
        throw APIStartError(description: "cannot write \(url.path): \(reason)")
    }
}

/// Refuses a file that others may read (mode beyond 0600), as the identity key is refused: a token or key that
/// leaked is not used.
func requirePrivate(_ url: URL) throws {
    var info = stat()
    guard stat(url.path, &info) == 0 else {
        throw APIStartError(description: "cannot read \(url.path): \(String(cString: strerror(errno)))")
    }
    let mode = info.st_mode & 0o777
    guard mode & 0o077 == 0 else {
        throw APIStartError(
            description: "\(url.path) is accessible by other users (mode \(String(mode, radix: 8))); fix it with: "
                + "chmod 600 '\(url.path)'"
        )
    }
}
