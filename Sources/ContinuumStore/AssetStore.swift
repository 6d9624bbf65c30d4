import ContinuumCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Photos as content-addressed files: `photos/ab/abcdef…` holds the bytes whose SHA-256 is `abcdef…`.
///
/// A file is written under `photos/tmp/`, fsynced, then renamed into place, so a file at its final name is
/// always complete. The same bytes are stored once, however many posts reference them.
public struct AssetStore: Sendable {
    public let root: URL
    /// ``root`` as a path: ``contains(_:)`` builds a photo's path from it as a string, not as a URL.
    private let rootPath: String

    public init(root: URL) {
        self.root = root
        self.rootPath = root.path
    }

    /// The final path of a photo. Paths here name whether they are directories: `appendingPathComponent(_:)`
    /// alone asks the file system (a `stat` each), which was a tenth of a receiver's CPU on many small photos.
    public func url(for hash: AssetHash) -> URL {
        let hex = hash.hex
        return root.appendingPathComponent(String(hex.prefix(2)), isDirectory: true).appendingPathComponent(
            hex,
            isDirectory: false
        )
    }

    public var temporaryDirectory: URL { root.appendingPathComponent("tmp", isDirectory: true) }

    /// True when the complete photo is on disk.
    public func contains(_ hash: AssetHash) -> Bool {
        let hex = hash.hex
        return FileManager.default.fileExists(atPath: "\(rootPath)/\(hex.prefix(2))/\(hex)")
    }

    /// Stores bytes, returning their hash. Does nothing (but return the hash) when they are already stored.
    @discardableResult
    public func store(_ data: Data) throws(StoreError) -> AssetHash {
        let hash = AssetHash.of(data)
        if contains(hash) { return hash }
        let (temp, descriptor) = try openTemporaryFile()
        do {
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            // Synced before it is closed, or the write failed already: the close cannot lose anything that counts.
            defer { try? handle.close() }
            try handle.write(contentsOf: data)
            try handle.synchronize()
        } catch {
            // Best effort: the write already failed with its own error; a temp file left behind is removed once a
            // day old, when the store is next opened (``removeStaleTemporaryFiles(olderThan:)``).
            try? FileManager.default.removeItem(at: temp)
            throw StoreError(.io, "cannot write photo to \(temp.path): \(error.localizedDescription)")
        }
        try commit(temp, as: hash)
        return hash
    }

    /// Writes bytes to a new temporary file, hashing them meanwhile on a second thread (the copy into the page cache
    /// and SHA-256 take about as long each here), and starts the disk on each piece as it is written
    /// (``FileWriteback``): the sync before the file's rename (``synchronize(_:)``) then has little left to wait for.
    /// Not synced; a failure leaves no file.
    func writeTemporary(_ data: Data) throws(StoreError) -> (file: URL, hash: AssetHash) {
        let (temp, descriptor) = try openTemporaryFile()
        let hash = Mutex<AssetHash?>(nil)
        let written = Mutex<Int32>(0)
        DispatchQueue.concurrentPerform(iterations: 2) { part in
            if part == 0 {
                hash.withLock { $0 = AssetHash.of(data) }
            } else {
                written.withLock { $0 = Self.writeAll(data, to: descriptor) }
            }
        }
        // Only written to: a close error loses nothing the failed write had not already lost, and the file goes.
        close(descriptor)
        let error = written.withLock { $0 }
        guard error == 0, let hash = hash.withLock({ $0 }) else {
            // Best effort: the write's own error is the one reported; a file left is swept once a day old.
            unlink(temp.path)
            throw StoreError(.io, "cannot write photo to \(temp.path): \(String(cString: strerror(error)))")
        }
        return (temp, hash)
    }

    /// Writes all of `data` in pieces of 256 KiB, starting the disk on each; 0, or the `errno` of a failed write.
    private static func writeAll(_ data: Data, to descriptor: Int32) -> Int32 {
        data.withUnsafeBytes { buffer -> Int32 in
            var offset = 0
            while offset < buffer.count {
                let piece = min(buffer.count - offset, 256 << 10)
                let count = write(descriptor, buffer.baseAddress! + offset, piece)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                FileWriteback.start(descriptor, offset: Int64(offset), length: Int64(count))
                offset += count
            }
            return 0
        }
    }

    /// Creates an empty file under `photos/tmp/` for a photo being written.
    public func makeTemporaryFile() throws(StoreError) -> URL {
        let (temp, descriptor) = try openTemporaryFile()
        close(descriptor)
        return temp
    }

    /// A new, empty file under `photos/tmp/`, open for writing: made by one `open` (and the directory first only when
    /// it is missing), not written under another name and renamed as `FileManager.createFile` does.
    private func openTemporaryFile() throws(StoreError) -> (URL, Int32) {
        let temp = temporaryDirectory.appendingPathComponent(UUID().uuidString, isDirectory: false)
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC
        var descriptor = open(temp.path, flags, 0o644)
        if descriptor < 0, errno == ENOENT {
            do {
                try FileManager.default.createDirectory(at: temporaryDirectory, withIntermediateDirectories: true)
            } catch {
                throw StoreError(.io, "cannot create \(temporaryDirectory.path): \(error.localizedDescription)")
            }
            descriptor = open(temp.path, flags, 0o644)
        }
        guard descriptor >= 0 else {
            throw StoreError(.io, "cannot create \(temp.path): \(String(cString: strerror(errno)))")
        }
        return (temp, descriptor)
    }

    /// Moves a complete, synced temp file to the photo's final name. The caller has checked its hash. Only the store
    /// commits photos (``ContinuumStore/keepPhoto(_:as:bytes:)``, ``ContinuumStore/commitFetchedPhotos(_:)``), so that
    /// a photo is at its name and recorded in one of the store's operations.
    func commit(_ temp: URL, as hash: AssetHash) throws(StoreError) {
        try place(temp, as: hash)
        FileSync.directory(url(for: hash).deletingLastPathComponent())
    }

    /// Makes written files durable: each file's bytes (fsync), one by one. Only these files: a sync of the whole
    /// file system (`syncfs`) would also wait for every other program's unwritten data, and, with many nodes on one
    /// disk, for each other's.
    public func synchronize(_ files: [URL]) throws(StoreError) {
        for file in files {
            let fd = open(file.path, O_RDONLY)
            guard fd >= 0 else {
                throw StoreError(.io, "cannot open \(file.path): \(String(cString: strerror(errno)))")
            }
            defer { close(fd) }
            guard fsync(fd) == 0 else {
                throw StoreError(.io, "cannot sync \(file.path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Makes the renames of a batch durable: one fsync of each photo directory that a rename changed.
    public func synchronizeDirectories(of hashes: [AssetHash]) {
        for shard in Set(hashes.map { url(for: $0).deletingLastPathComponent() }) { FileSync.directory(shard) }
    }

    /// Renames a complete temp file to the photo's final name, without making the rename durable (the caller
    /// syncs the photo's directory: ``commit(_:as:)`` at once, a batch once per directory).
    func place(_ temp: URL, as hash: AssetHash) throws(StoreError) {
        let final = url(for: hash)
        let shard = final.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: shard, withIntermediateDirectories: true)
        } catch {
            throw StoreError(.io, "cannot create \(shard.path): \(error.localizedDescription)")
        }
        guard rename(temp.path, final.path) == 0 else {
            let reason = String(cString: strerror(errno))
            // Best effort, as above: the rename's error is the one reported.
            try? FileManager.default.removeItem(at: temp)
            throw StoreError(.io, "cannot move photo into \(final.path): \(reason)")
        }
    }

    /// Removes partial files left by a crash: those under `photos/tmp/` untouched for longer than `age` seconds.
    public func removeStaleTemporaryFiles(olderThan age: TimeInterval = 86_400) {
        let manager = FileManager.default
        // Housekeeping only: a directory that cannot be listed (or is not there yet) is swept at the next opening.
        guard let names = try? manager.contentsOfDirectory(atPath: temporaryDirectory.path) else { return }
        let cutoff = Date().addingTimeInterval(-age)
        for name in names {
            let url = temporaryDirectory.appendingPathComponent(name)
            // Housekeeping too: a file that cannot be looked at or removed stays until the next opening's sweep.
            if let modified = try? manager.attributesOfItem(atPath: url.path)[.modificationDate] as? Date,
                modified < cutoff
            {
                try? manager.removeItem(at: url)
            }
        }
    }

    /// Erases every file of a photo: the photo, a partial download, and its thumbnails (this node's own and a
    /// peer's, `thumbs/ab/<hash>.jpg` and `.peer.jpg`). Files already gone are fine; one that cannot be removed is
    /// left, and found again by the next erasure of the same photo.
    public func erase(_ hash: AssetHash) {
        let shard = root.appendingPathComponent("thumbs").appendingPathComponent(String(hash.hex.prefix(2)))
        for url in [
            url(for: hash),
            temporaryDirectory.appendingPathComponent("\(hash.hex).partial"),
            shard.appendingPathComponent("\(hash.hex).jpg"),
            shard.appendingPathComponent("\(hash.hex).peer.jpg"),
        ] {
            // Files already gone are fine, and one that cannot be removed is left (see above).
            try? FileManager.default.removeItem(at: url)
        }
    }

    /// Removes a photo's thumbnails (this node's own and a peer's), keeping the photo: the next request for one
    /// makes it from the photo, or asks peers while the photo is not here. Files already gone are fine.
    public func eraseThumbnails(of hash: AssetHash) {
        let shard = root.appendingPathComponent("thumbs").appendingPathComponent(String(hash.hex.prefix(2)))
        for name in ["\(hash.hex).jpg", "\(hash.hex).peer.jpg"] {
            // As in erase(_:): one that cannot be removed is left; a contest of the same photo tries again.
            try? FileManager.default.removeItem(at: shard.appendingPathComponent(name))
        }
    }

    /// Copies a stored photo to `destination`, which must not exist.
    public func export(_ hash: AssetHash, to destination: URL) throws(StoreError) {
        do {
            try FileManager.default.copyItem(at: url(for: hash), to: destination)
        } catch {
            throw StoreError(.io, "cannot write \(destination.path): \(error.localizedDescription)")
        }
    }
}
