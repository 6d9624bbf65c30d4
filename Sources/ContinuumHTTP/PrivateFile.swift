import Foundation

/// Writes `data` to `url` readable by this user only (mode 0600 from the start, never wider), replacing what was
/// there: written beside it under a temporary name, then renamed into place.
func writePrivate(_ data: Data, to url: URL) throws {
    let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID())")
    guard FileManager.default.createFile(atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600])
    else { throw APIStartError(description: "cannot write \(url.path)") }
    guard rename(temporary.path, url.path) == 0 else {
        try? FileManager.default.removeItem(at: temporary)
        throw APIStartError(description: "cannot write \(url.path): \(String(cString: strerror(errno)))")
    }
}
