import ContinuumCore
import Foundation
import GRDB

/// Small photos (at most ``ContinuumStore/smallPhotoBytes``) that came from peers many at once (PHOTOS, PROTOCOL.md
/// §7.4.27) are kept in the store's own table, `asset_content`, in the one transaction that records them: one durable
/// commit for a batch, and no file to create. On this machine's disk a new file cost about 1.2 ms of the kernel's
/// time (ext4 looks for a free inode not recently deleted), more than the rest of a small photo's way.
///
/// Every reader takes the photo from either place: ``photoContent(_:)`` (the table), else the file.
extension ContinuumStore {
    /// The largest photo kept in the store rather than as a file: 64 KiB (the wire's `smallPhotoBytes`).
    public static let smallPhotoBytes = 64 * 1024

    /// Stores small photos a peer sent whole, each checked against its hash by the caller: one transaction records
    /// them all, with their bytes, only while a live post shows each. Returns, in order, whether each is here now (a
    /// photo already here counts; one erased meanwhile, or too large, does not).
    public func commitSmallPhotos(_ photos: [(hash: AssetHash, bytes: [UInt8])]) async throws -> [Bool] {
        guard !photos.isEmpty else { return [] }
        let now = Timestamp.now().milliseconds
        return try await write { db -> [Bool] in
            let asset = try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO asset (sha256, bytes, stored_at) VALUES (?, ?, ?)"
            )
            let content = try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO asset_content (sha256, content) VALUES (?, ?)"
            )
            let lacks = try db.cachedStatement(sql: "DELETE FROM peer_lack WHERE sha256 = ?")
            var kept: [Bool] = []
            kept.reserveCapacity(photos.count)
            for photo in photos {
                guard photo.bytes.count <= Self.smallPhotoBytes, try Self.isShown(photo.hash, db) else {
                    kept.append(false)
                    continue
                }
                try asset.execute(arguments: [photo.hash.bytes, photo.bytes.count, now])
                // A photo already here as a file keeps its file; only a new one takes a row of bytes.
                if db.changesCount > 0 { try content.execute(arguments: [photo.hash.bytes, Data(photo.bytes)]) }
                try lacks.execute(arguments: [photo.hash.bytes])
                kept.append(true)
            }
            return kept
        }
    }

    /// The bytes of a photo kept in the store (``commitSmallPhotos(_:)``); nil for one kept as a file, or not here.
    public func photoContent(_ hash: AssetHash) async throws -> Data? {
        try await read { db in
            try Data.fetchOne(
                db.cachedStatement(sql: "SELECT content FROM asset_content WHERE sha256 = ?"),
                arguments: [hash.bytes]
            )
        }
    }

    /// The bytes of a held photo of at most ``smallPhotoBytes``, from the store or from its file; nil when it is not
    /// here or is larger.
    public func smallPhoto(_ hash: AssetHash) async throws -> [UInt8]? {
        if let content = try await photoContent(hash) { return [UInt8](content) }
        return try smallPhotoFile(hash)
    }

    /// The bytes of each of these photos that is here, of at most ``smallPhotoBytes``, and shown by a live post (by
    /// a log of one of `groups`, when given): what a PHOTOS answers, looked up in one read for the whole batch
    /// rather than two a photo.
    public func smallPhotos(
        _ hashes: [AssetHash],
        shownInGroups groups: Set<GroupID>?
    ) async throws -> [AssetHash: [UInt8]] {
        guard !hashes.isEmpty, groups?.isEmpty != true else { return [:] }
        let shown = try await read { db -> [(hash: AssetHash, content: Data?)] in
            let content = try db.cachedStatement(sql: "SELECT content FROM asset_content WHERE sha256 = ?")
            var shown: [(hash: AssetHash, content: Data?)] = []
            for hash in hashes {
                let isShown = try groups.map { try Self.isShown(hash, inGroups: $0, db) } ?? Self.isShown(hash, db)
                if isShown { shown.append((hash, try Data.fetchOne(content, arguments: [hash.bytes]))) }
            }
            return shown
        }
        var photos: [AssetHash: [UInt8]] = [:]
        for (hash, content) in shown {
            if let bytes = try content.map({ [UInt8]($0) }) ?? smallPhotoFile(hash) { photos[hash] = bytes }
        }
        return photos
    }

    /// A small photo's bytes from its file; nil when there is no file, or it is larger than ``smallPhotoBytes``.
    private func smallPhotoFile(_ hash: AssetHash) throws -> [UInt8]? {
        let url = assets.url(for: hash)
        // A file that cannot be opened is a photo not here as a file (the store's table was asked first): not held.
        guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        // Only read from: closing cannot lose anything.
        defer { try? handle.close() }
        do {
            let data = try handle.read(upToCount: Self.smallPhotoBytes + 1) ?? Data()
            return data.isEmpty || data.count > Self.smallPhotoBytes ? nil : [UInt8](data)
        } catch {
            throw StoreError(.io, "cannot read \(url.path): \(error.localizedDescription)")
        }
    }

    /// What is wrong with the photos kept in the store: a row whose bytes do not hash to its name, or a small photo
    /// recorded as held with neither its bytes here nor its file (each a line; none when all is well).
    public func checkSmallPhotos() async throws -> [String] {
        let (rows, bare) = try await read { db in
            (
                try Row.fetchAll(db, sql: "SELECT sha256, content FROM asset_content").map {
                    (name: $0["sha256"] as Data, content: $0["content"] as Data)
                },
                try Data.fetchAll(
                    db,
                    sql: """
                        SELECT sha256 FROM asset WHERE bytes <= ?
                        AND NOT EXISTS (SELECT 1 FROM asset_content WHERE asset_content.sha256 = asset.sha256)
                        """,
                    arguments: [Self.smallPhotoBytes]
                )
            )
        }
        var problems: [String] = []
        for (name, content) in rows {
            if AssetHash.of(content).bytes != name {
                problems.append("photo \(Hex.encode(name)) does not hash to its name")
            }
        }
        for name in bare {
            guard let hash = AssetHash(bytes: name), !assets.contains(hash) else { continue }
            problems.append("photo \(hash.hex) is recorded with neither its bytes nor its file")
        }
        return problems
    }

    /// Copies a held photo to `destination`, which must not exist: from its file, or from the store.
    public func exportPhoto(_ hash: AssetHash, to destination: URL) async throws {
        guard let content = try await photoContent(hash) else {
            try assets.export(hash, to: destination)
            return
        }
        do {
            try content.write(to: destination, options: .withoutOverwriting)
        } catch {
            throw StoreError(.io, "cannot write \(destination.path): \(error.localizedDescription)")
        }
    }

    /// The path of a held photo's file. A photo kept in the store is written out as its file first (synced, then
    /// renamed into place, as any photo file), for a person who asked where it is (`continuum-node fetch`).
    public func photoFile(_ hash: AssetHash) async throws -> URL {
        if let content = try await photoContent(hash), !assets.contains(hash) {
            try assets.store(content)
            // Erased while it was written: its erasure removed the files before this one was there.
            if try await !isPhotoShown(hash) { assets.erase(hash) }
        }
        return assets.url(for: hash)
    }
}
