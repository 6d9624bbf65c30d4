import ContinuumCore
import Foundation
import GRDB
import Logging
import Synchronization

/// A photo fetched from a peer, complete and checked against its hash, in a temp file not yet synced.
public struct FetchedPhoto: Sendable {
    public let file: URL
    public let hash: AssetHash
    public let bytes: Int64

    public init(file: URL, hash: AssetHash, bytes: Int64) {
        self.file = file
        self.hash = hash
        self.bytes = bytes
    }
}

/// A photo of this node's at its final name, its bytes and the rename durable, not yet recorded as available:
/// ``ContinuumStore/placePhoto(_:as:bytes:)``, then the post's own transaction records it.
public struct PlacedPhoto: Sendable, Hashable {
    public let hash: AssetHash
    public let bytes: Int64
}

/// The node's store: the record log, the views derived from it, search, and the photo files.
///
/// A `Sendable` value around a GRDB database writer, in GRDB's AppDatabase shape: ``open(_:logger:)`` is the
/// production factory (a `DatabasePool` in WAL mode: reads run concurrently, writes are serialised by SQLite), and
/// tests hand it an in-memory queue (``inMemory(assets:logger:)``). Each intent-named write method is one
/// transaction. Several processes may open the same store at once (the running node and a CLI command); SQLite's
/// locking keeps them consistent.
public struct ContinuumStore: Sendable {
    /// The database: a WAL `DatabasePool` on disk (``open(_:logger:)``), or an in-memory queue in tests
    /// (``inMemory(assets:logger:)``). Every read and write of the store goes through it.
    let database: any DatabaseWriter
    public let assets: AssetStore
    let logger: Logger
    /// Compacts after erasures from peers, once for a burst of them.
    let compactor = ErasureCompactor()
    /// Whether the store is closed, for the work that runs in the background after an erasure.
    let lifecycle = StoreLifecycle()
    /// Told when an erasure's WAL truncation is left to the background (``handingUnfinishedErasures(to:)``).
    var unfinishedErasure: (@Sendable () -> Void)? = nil
    /// Per author, a sequence at or above every record of its log held: raised by every write of this store.
    let ceilings = SequenceCeilings()
    /// How long a write waits for another process's write to finish before it fails.
    static let busyTimeoutMilliseconds = 10_000

    /// Opens (creating if needed) the store in a data directory and runs pending migrations.
    public static func open(_ directory: DataDirectory, logger: Logger) throws -> ContinuumStore {
        try directory.create()
        AssetStore(root: directory.photosURL).removeStaleTemporaryFiles()
        return try ContinuumStore(
            databaseURL: directory.databaseURL,
            assets: AssetStore(root: directory.photosURL),
            logger: logger
        )
    }

    /// A store whose database lives in memory, for tests of the store's rules: the same schema, functions and
    /// queries as on disk, with no file and no fsync. Photo files still go to `assets`.
    public static func inMemory(assets: AssetStore, logger: Logger) throws -> ContinuumStore {
        do {
            return try ContinuumStore(
                database: DatabaseQueue(configuration: memoryConfiguration()),
                assets: assets,
                logger: logger
            )
        } catch let error as DatabaseError {
            throw StoreError(.database, "cannot make an in-memory store: \(error.message ?? "\(error)")")
        }
    }

    /// A new in-memory store holding a copy of this one's database (SQLite's online backup), for tests that make
    /// many stores: the schema's migrations run once, in the store copied, not in each copy. Photo files go to
    /// `assets`.
    public func inMemoryCopy(assets: AssetStore, logger: Logger) throws -> ContinuumStore {
        do {
            let queue = try DatabaseQueue(configuration: Self.memoryConfiguration())
            try database.backup(to: queue)
            return try ContinuumStore(database: queue, assets: assets, logger: logger)
        } catch let error as DatabaseError {
            throw StoreError(.database, "cannot copy the store into memory: \(error.message ?? "\(error)")")
        }
    }

    /// The configuration of a store in memory: its label, and the SQL functions the queries use.
    private static func memoryConfiguration() -> Configuration {
        var configuration = Configuration()
        configuration.label = "continuum-memory"
        configuration.prepareDatabase { db in db.add(function: Self.distanceFunction) }
        return configuration
    }

    /// The write-ahead log's path: every commit, by any process, writes there (``writeStamp()``). Nil in memory.
    private let walPath: String?
    /// Copies the WAL back into the database file off the writer's thread. Nil in memory.
    let checkpointer: WALCheckpointer?

    /// A stamp of the write-ahead log (its size and modification time) that changes whenever any connection, in
    /// this process or another, commits: a poll that sees the same stamp knows nothing was written, without a query.
    /// Nil when the file cannot be read (and for a store in memory, which has no such file).
    public func writeStamp() -> [Int]? {
        var info = stat()
        guard let walPath, stat(walPath, &info) == 0 else { return nil }
        return [Int(info.st_size), info.st_mtim.tv_sec, info.st_mtim.tv_nsec, Int(info.st_ino)]
    }

    /// Opens (creating if needed) a store at explicit locations.
    public init(databaseURL: URL, assets: AssetStore, logger: Logger) throws {
        try self.init(databaseURL: databaseURL, assets: assets, logger: logger, checkpoints: .init())
    }

    /// Opens a store whose WAL is checkpointed in the background at `checkpoints` (tests lower them).
    init(databaseURL: URL, assets: AssetStore, logger: Logger, checkpoints: WALCheckpointer.Limits) throws {
        let checkpointer = WALCheckpointer(databasePath: databaseURL.path, limits: checkpoints, logger: logger)
        var configuration = Configuration()
        configuration.busyMode = .timeout(Double(Self.busyTimeoutMilliseconds) / 1000)
        configuration.label = "continuum"
        configuration.maximumReaderCount = 3
        configuration.prepareDatabase { db in
            // A write is durable on disk before it is acknowledged, power loss included. (For the writer, GRDB's
            // DatabasePool sets NORMAL after this, when it turns WAL on: it is set to FULL again below.)
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // Page cache: 16 MiB for the one writer (ingest touches index pages all over: with 8 MiB, 100,000 records
            // stored 15 % slower, Docs/BENCHMARKS.md), 2 MiB for each reader (readers run short queries).
            try db.execute(sql: db.configuration.readonly ? "PRAGMA cache_size = -2048" : "PRAGMA cache_size = -16384")
            // Erased content is overwritten with zeros in the file, not only unlinked (PROTOCOL.md §2.6).
            try db.execute(sql: "PRAGMA secure_delete = ON")
            // The writer's statement journals in memory: SQLite spilled them to files of its own under /var/tmp,
            // unlinked but written to the disk with copies of the pages a statement changed (900 MiB for 100,000
            // records stored), where erased content would outlive its erasure. Readers write no journal and keep the
            // default: with theirs in memory, SQLite's sorts were slower (the whole log's, as a store opened before
            // the sequence ceilings were read from the index, took 70 ms longer at 170,000 records; BENCHMARKS.md).
            if !db.configuration.readonly { try db.execute(sql: "PRAGMA temp_store = MEMORY") }
            db.add(function: Self.distanceFunction)
            // The writer's commits ask for checkpoints, done on a thread of the checkpointer's (SQLite's own
            // auto-checkpoint ran them in the commit that crossed its threshold).
            if !db.configuration.readonly { checkpointer.install(on: db) }
        }
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: databaseURL.path, configuration: configuration)
            // GRDB turns WAL on with `synchronous = NORMAL` after `prepareDatabase`, which leaves a commit in the
            // WAL, unsynced, until the next checkpoint: a power loss could take records already acknowledged to a
            // peer. FULL syncs the WAL at every commit. (Outside a transaction: SQLite ignores it inside one.)
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        } catch let error as DatabaseError {
            throw StoreError(.database, "cannot open the store at \(databaseURL.path): \(error.message ?? "\(error)")")
        }
        try self.init(
            database: pool,
            assets: assets,
            logger: logger,
            walPath: databaseURL.path + "-wal",
            checkpointer: checkpointer
        )
    }

    /// A store over a database already opened: refuses one of protocol v1, then runs pending migrations.
    init(
        database: any DatabaseWriter,
        assets: AssetStore,
        logger: Logger,
        walPath: String? = nil,
        checkpointer: WALCheckpointer? = nil
    ) throws {
        do {
            try Self.refuseProtocolV1(database, at: walPath.map { URL(fileURLWithPath: $0) })
            try Schema.migrator.migrate(database)
            try database.read { [ceilings] db in try ceilings.raise(db) }
        } catch let error as DatabaseError {
            let place = walPath.map { " at " + $0.dropLast("-wal".count) } ?? ""
            throw StoreError(.database, "cannot open the store\(place): \(error.message ?? "\(error)")")
        }
        self.database = database
        self.assets = assets
        self.logger = logger
        self.walPath = walPath
        self.checkpointer = checkpointer
    }

    /// A store written before protocol v2 holds records that cannot be converted: they are signed by their authors.
    /// It is refused, untouched, with one line that says what to do.
    private static func refuseProtocolV1(_ database: any DatabaseWriter, at wal: URL?) throws {
        let old = try database.read { db -> Int in
            guard try db.tableExists("record"),
                try !Schema.migrator.appliedIdentifiers(db).contains(Schema.protocolV2)
            else { return 0 }
            return try Int.fetchOne(db, sql: "SELECT count(*) FROM record") ?? 0
        }
        guard old > 0 else { return }
        let directory = wal?.deletingLastPathComponent().path ?? "the store"
        throw StoreError(
            .database,
            "\(directory) holds \(old) records of protocol v1, which this version (record format 2) cannot read or "
                + "convert; move it away (mv \(directory) \(directory).v1) and run 'continuum-node init' again"
        )
    }

    /// `continuum_distance_km(lat_e7, lon_e7, latitude, longitude)`: haversine distance for the `--near` filter.
    static let distanceFunction = DatabaseFunction("continuum_distance_km", argumentCount: 4, pure: true) { values in
        guard let latE7 = Int64.fromDatabaseValue(values[0]), let lonE7 = Int64.fromDatabaseValue(values[1]),
            let lat = Double.fromDatabaseValue(values[2]), let lon = Double.fromDatabaseValue(values[3])
        else { return nil }
        return Coordinate.distanceKm(
            latitude1: Double(latE7) / 1e7,
            longitude1: Double(lonE7) / 1e7,
            latitude2: lat,
            longitude2: lon
        )
    }

    /// Closes the database connections. A compaction running in the background (``compact()``) finishes first;
    /// none starts after.
    public func close() throws {
        try lifecycle.close {
            try checkpointer?.close()
            try database.close()
        }
    }

    /// Finishes the compaction that erasures from peers are waiting for (at once, not after the usual second), so
    /// that nothing erased is left in the search index or the WAL when the store is closed. Call before ``close()``.
    /// A reader that holds the WAL past ``truncationWait`` leaves it untruncated (SQLite checkpoints and removes it
    /// when the last connection, of any process, closes).
    public func finishPendingErasures() async {
        await compactor.flush(self)
    }

    // MARK: - Writes

    /// Stores verified records in one transaction and updates every derived view.
    ///
    /// Records already held are no-ops. Forks are refused, kept as evidence and reported. A record that breaks
    /// a rule needing another record (an edit of someone else's post) is stored, so that logs stay gap-free and
    /// every node holds the same set, but no view applies it; it is reported in `ignored`.
    ///
    /// Newly stored records make the notifications that `policy` calls for, marked with `delivery`.
    public func ingest(
        _ records: [VerifiedRecord],
        delivery: Delivery = .live,
        notifying policy: NotificationPolicy? = nil
    ) async throws -> IngestReport {
        try await ingest([(delivery, records)], notifying: policy)
    }

    /// Stores groups of records that came by different paths, in one transaction.
    public func ingest(
        _ groups: [(delivery: Delivery, records: [VerifiedRecord])],
        notifying policy: NotificationPolicy?
    ) async throws -> IngestReport {
        let now = Timestamp.now().milliseconds
        let report = try await write { db in
            var report = IngestReport()
            var ingest = Ingest(db: db, now: now, notifications: policy)
            for (delivery, records) in groups {
                ingest.delivery = delivery
                for record in records {
                    switch try ingest.one(record) {
                    case .stored(let ignored):
                        report.stored.append(record.id)
                        if let ignored {
                            report.ignored.append(.init(id: record.id, error: ignored))
                            logger.notice(
                                "stored a record that no view will apply",
                                metadata: ["record.id": "\(record.id.short)", "reason": "\(ignored.message)"]
                            )
                        }
                    case .duplicate: report.duplicates += 1
                    case .fork(let fork): report.forks.append(fork)
                    case .rejected(let error): report.ignored.append(.init(id: record.id, error: error))
                    }
                }
            }
            try ingest.finish()
            report.erasedPhotos = ingest.erasedPhotos.sorted()
            report.contestedThumbnails = ingest.contestedThumbnails.sorted()
            report.erasedText = ingest.erasedText
            report.droppedErasedContent = ingest.droppedErasedContent
            return report
        }
        try await finishErasure(photos: report.erasedPhotos, text: report.erasedText, coalesce: true)
        for photo in report.contestedThumbnails { assets.eraseThumbnails(of: photo) }
        if report.droppedErasedContent > 0 {
            logger.notice(
                "dropped the content of records their authors erased; kept their headers only",
                metadata: ["records": "\(report.droppedErasedContent)"]
            )
        }
        return report
    }

    /// Signs a new record of this node's and stores it, in one transaction.
    ///
    /// The sequence number and `previous` come from the author's log inside the transaction, so two processes
    /// appending at once cannot fork the log. Throws, storing nothing, if the record breaks a rule (such as an
    /// edit of someone else's post).
    /// `recording`: photos placed for it (``placePhoto(_:as:bytes:)``), recorded as available in the same
    /// transaction, or not at all when the record is refused.
    public func append(
        _ body: RecordBody,
        createdAt: Timestamp = .now(),
        by identity: NodeIdentity,
        autoFollow: Bool = false,
        recording photos: [PlacedPhoto] = []
    ) async throws
        -> VerifiedRecord
    {
        try await append([body], createdAt: createdAt, by: identity, autoFollow: autoFollow, recording: photos)[0]
    }

    /// Signs several new records of this node's and stores them in one transaction: all of them, or none.
    /// With `autoFollow`, the node follows each new post of its own in the same transaction.
    public func append(
        _ bodies: [RecordBody],
        createdAt: Timestamp = .now(),
        by identity: NodeIdentity,
        autoFollow: Bool = false,
        recording photos: [PlacedPhoto] = []
    ) async throws
        -> [VerifiedRecord]
    {
        let now = Timestamp.now().milliseconds
        let (records, erasedPhotos, erasedText) = try await write { db in
            for photo in photos { try Self.record(photo, now: now, db) }
            var ingest = Ingest(db: db, now: now)
            let records = try bodies.map { body in
                let record = try ingest.signAndStore(
                    body,
                    by: identity,
                    createdAt: try Ingest.signingTime(of: body, at: createdAt, by: identity.author, db)
                )
                if autoFollow, case .post = body { try Self.followNew(PostID(record.id), now: now, db) }
                return record
            }
            try ingest.finish()
            return (records, ingest.erasedPhotos.sorted(), ingest.erasedText)
        }
        try await finishErasure(photos: erasedPhotos, text: erasedText)
        return records
    }

    /// Whether a live post shows the photo (its own, or one an edit put in). A photo no live post shows is erased
    /// (PROTOCOL.md §2.6): it is not fetched, served, or given a thumbnail.
    public func isPhotoShown(_ hash: AssetHash) async throws -> Bool {
        try await read { db in try Self.isShown(hash, db) }
    }

    static func isShown(_ hash: AssetHash, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM post WHERE photo_sha256 = ? AND deleted = 0"),
            arguments: [hash.bytes]
        ) != nil
    }

    /// Removes a photo that no live post shows: the file this node stored for a post that was then not signed
    /// (its append failed), so that nothing is left of it.
    public func dropPhotoIfUnshown(_ hash: AssetHash) async throws {
        let dropped = try await write { db -> Bool in
            guard try !Self.isShown(hash, db) else { return false }
            try db.execute(sql: "DELETE FROM asset WHERE sha256 = ?", arguments: [hash.bytes])
            try db.execute(sql: "DELETE FROM asset_content WHERE sha256 = ?", arguments: [hash.bytes])
            return true
        }
        if dropped { assets.erase(hash) }
    }

    /// Keeps an uploaded photo: a complete temporary file of the store's (``AssetStore/makeTemporaryFile()``), whose
    /// hash the caller checked, is synced, moved to its final name, and recorded as available.
    public func keepPhoto(_ temporaryFile: URL, as hash: AssetHash, bytes: Int64) async throws {
        try await recordPhoto(placePhoto(temporaryFile, as: hash, bytes: bytes))
    }

    /// Stores a photo file's bytes (once) and records that it is available.
    public func storePhoto(_ data: Data) async throws -> AssetHash {
        let (file, hash) = try writePhoto(data)
        try await recordPhoto(placePhoto(file, as: hash, bytes: Int64(data.count)))
        return hash
    }

    /// Writes a photo's bytes to a new temporary file of the store's, hashing them meanwhile, for
    /// ``placePhoto(_:as:bytes:)`` (which syncs and renames it) once the record that shows it is signed.
    public func writePhoto(_ data: Data) throws -> (file: URL, hash: AssetHash) {
        try assets.writeTemporary(data)
    }

    /// Places a photo for a post of this node's: a complete temporary file of the store's, whose hash the caller
    /// checked, is synced and moved to its final name; not yet recorded as available, which the post's own
    /// transaction does (``append(_:createdAt:by:autoFollow:recording:)``), so that a post and its photo cost one
    /// commit. Until then no live post shows it: it is neither served nor counted.
    /// A photo already at its final name is not placed again: the temporary file goes.
    public func placePhoto(_ temporaryFile: URL, as hash: AssetHash, bytes: Int64) throws -> PlacedPhoto {
        if assets.contains(hash) {
            // Best effort: the photo is here already; a file left in photos/tmp is swept once a day old.
            try? FileManager.default.removeItem(at: temporaryFile)
        } else {
            try assets.synchronize([temporaryFile])
            try assets.commit(temporaryFile, as: hash)
        }
        return PlacedPhoto(hash: hash, bytes: bytes)
    }

    /// Stores a batch of fetched photos: complete files in `photos/tmp/`, written but not synced, each checked
    /// against its hash. Their bytes are synced, they are renamed into place, each directory a rename changed is
    /// synced once, and one transaction records them all. A crash before the end loses at most this batch, and
    /// never shows a partial or wrong file: a photo is at its final name only once its bytes are on disk, and
    /// recorded only once it is there. Returns, in order, whether each was kept (a photo no live post shows any more
    /// is removed instead).
    public func commitFetchedPhotos(_ photos: [FetchedPhoto]) async throws -> [Bool] {
        guard !photos.isEmpty else { return [] }
        let hashes = photos.map(\.hash)
        // Whether each is still shown is read while the files are synced (the read does not wait for the writer):
        // a photo erased meanwhile, rare, is synced for nothing and removed.
        async let shownNow = read { db in try hashes.map { try Self.isShown($0, db) } }
        try assets.synchronize(photos.map(\.file))
        let shownBefore = try await shownNow
        for (photo, shown) in zip(photos, shownBefore) where !shown {
            // Best effort: the photo is not kept either way; a file left in photos/tmp is removed once a day old,
            // when the store is next opened.
            try? FileManager.default.removeItem(at: photo.file)
        }
        let candidates = zip(photos, shownBefore).filter(\.1).map(\.0)
        guard !candidates.isEmpty else { return Array(repeating: false, count: photos.count) }
        var placed: [FetchedPhoto] = []
        for photo in candidates {
            do {
                try assets.place(photo.file, as: photo.hash)
                placed.append(photo)
            } catch {
                logger.error(
                    "cannot store a photo",
                    metadata: ["photo.sha256": "\(photo.hash.short)", "error": "\(error)"]
                )
            }
        }
        assets.synchronizeDirectories(of: placed.map(\.hash))
        let now = Timestamp.now().milliseconds
        let batch = placed
        // Recorded only if still shown: an erasure that committed meanwhile may have missed a file just renamed.
        let kept = try await write { db -> Set<AssetHash> in
            var kept: Set<AssetHash> = []
            let insert = try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO asset (sha256, bytes, stored_at) VALUES (?, ?, ?)"
            )
            let lacks = try db.cachedStatement(sql: "DELETE FROM peer_lack WHERE sha256 = ?")
            for photo in batch where try Self.isShown(photo.hash, db) {
                try insert.execute(arguments: [photo.hash.bytes, photo.bytes, now])
                try lacks.execute(arguments: [photo.hash.bytes])
                kept.insert(photo.hash)
            }
            return kept
        }
        for photo in batch where !kept.contains(photo.hash) { assets.erase(photo.hash) }
        return photos.map { kept.contains($0.hash) }
    }

    /// Records that a complete, verified photo is on disk (placed), in a transaction of its own: for a photo that no
    /// record of this node's records with it (a linked browser's, whose post comes later).
    public func recordPhoto(_ photo: PlacedPhoto) async throws {
        let now = Timestamp.now().milliseconds
        try await write { db in try Self.record(photo, now: now, db) }
    }

    static func record(_ photo: PlacedPhoto, now: Int64, _ db: Database) throws {
        try db.execute(
            sql: "INSERT OR IGNORE INTO asset (sha256, bytes, stored_at) VALUES (?, ?, ?)",
            arguments: [photo.hash.bytes, photo.bytes, now]
        )
        try db.execute(sql: "DELETE FROM peer_lack WHERE sha256 = ?", arguments: [photo.hash.bytes])
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await database.write { [ceilings] db in
                let result = try body(db)
                try ceilings.raise(db)
                return result
            }
        } catch let error as DatabaseError {
            throw StoreError(.database, "database error: \(error.message ?? "\(error)")")
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await database.read(body)
        } catch let error as DatabaseError {
            throw StoreError(.database, "database error: \(error.message ?? "\(error)")")
        }
    }
}

/// Open or closed, for background work that must not touch the database once it is closed. A step that uses the
/// database holds `lock`, which ``close(_:)`` takes too; whether the store is closed is read without waiting for one.
final class StoreLifecycle: Sendable {
    private let lock = NSLock()
    private let closed = Atomic<Bool>(false)

    /// Runs `body` unless the store is closed (nil then); ``close(_:)`` waits for it.
    func whileOpen<T>(_ body: () throws -> T) rethrows -> T? {
        lock.lock()
        defer { lock.unlock() }
        return closed.load(ordering: .acquiring) ? nil : try body()
    }

    /// Marks the store closed and runs `body` (which closes it), after any ``whileOpen(_:)`` under way.
    func close(_ body: () throws -> Void) rethrows {
        lock.lock()
        defer { lock.unlock() }
        closed.store(true, ordering: .releasing)
        try body()
    }

    /// Whether ``close(_:)`` has begun; read without waiting for a step under way (a merge of the search index can
    /// take seconds).
    var isClosed: Bool { closed.load(ordering: .acquiring) }
}
