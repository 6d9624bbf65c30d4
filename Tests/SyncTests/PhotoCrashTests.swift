import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import ContinuumWire
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Batched durable photo writes under SIGKILL (ARCHITECTURE.md, "Store and photo files"): a real node is killed at random points
/// of a photo transfer, again and again, and after every kill its store is checked as a restart would find it.
@Suite("A node killed during photo transfers", .serialized)
struct PhotoCrashTests {
    /// Kills, each at a random moment once photo bytes are flowing.
    static let kills = 50
    /// Photos of 2 MiB on A: 8 chunks each, sent one chunk every `chunkDelay` ms, 8 transfers at a time, so that
    /// the whole set takes about 64 / 8 * 8 * 0.4 s = 26 s of transfer: more than the 50 runs between kills use.
    static let photos = 64
    static let chunkDelay = 400

    @Test(
        "50 SIGKILLs mid-transfer: the database passes integrity_check, every photo file hashes to its name, no record acknowledged to the peer is missing, and the transfer completes after a restart"
    )
    func killedDuringPhotoTransfers() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        defer {
            a.remove()
            b.remove()
        }
        let posted = try await Self.fill(a)
        let acks = AckWatcher()
        // B reaches A through a relay that reads what B sends: every ACK B gave, for records it had made durable.
        try await a.start(extra: ["--insecure-plaintext", "--test-photo-chunk-delay-ms", "\(Self.chunkDelay)"])
        let proxy = try CountingProxy(to: a.port) { connection, bytes, up in
            if up { acks.received(bytes, on: connection) }
        }
        defer { proxy.close() }
        let bOptions = ["--insecure-plaintext", "--peer", "127.0.0.1:\(proxy.port)", "--no-api"]

        var random = SplitMix64(seed: 2026)
        var checked: Set<String> = []
        var midTransfer = 0
        var photosAtKill: [Int] = []
        for kill in 1...Self.kills {
            try await b.start(extra: bOptions)
            // Photo bytes are flowing (a partial file grows), or the set is complete.
            try await eventually("photo bytes flow to b (run \(kill))", timeout: .seconds(60)) {
                if Self.partialBytes(b) > 0 { return true }
                return try await Self.heldPhotos(b) == posted.count
            }
            try await Task.sleep(for: .milliseconds(Int(random.next() % 400)))
            if Self.partialBytes(b) > 0 { midTransfer += 1 }
            try await b.crash()
            let held = try await Self.expectSound(b, acked: acks.clock, run: kill, skipping: &checked)
            photosAtKill.append(held)
        }
        // Most kills landed while a photo was part-written: the test exercised what it claims to.
        #expect(midTransfer >= Self.kills * 3 / 4, "kills mid-transfer: \(midTransfer) of \(Self.kills)")
        #expect(photosAtKill.last ?? 0 < posted.count, "the set was still incomplete at the last kill: \(photosAtKill)")
        #expect(acks.count > 0, "b acknowledged records")

        // After a restart, the transfer completes, whole and right.
        try await b.start(extra: bOptions)
        try await eventually("every photo reaches b after the restart", timeout: .seconds(180)) {
            try await Self.heldPhotos(b) == posted.count
        }
        try await b.stop()
        var none: Set<String> = []
        _ = try await Self.expectSound(b, acked: acks.clock, run: Self.kills + 1, skipping: &none)
        for hash in posted {
            let file = b.data.appendingPathComponent("photos/\(hash.hex.prefix(2))/\(hash.hex)")
            #expect(FileManager.default.fileExists(atPath: file.path), "photo \(hash.short) on b")
        }
        let target = try await a.clock()
        #expect(try await b.clock().heads == target.heads, "b holds every record of the network")
        try await a.stop()
    }

    /// Fills A's store: 1,500 records from 20 authors of the test network, and `photos` posts by A, each with a
    /// distinct 2 MiB photo. Returns the photos' hashes.
    static func fill(_ node: TestNode) async throws -> [AssetHash] {
        try await node.withStore { store in
            var factory = RecordFactory(authorCount: 20, seed: 5, network: TestNode.networkGroup)
            let corpus = factory.history(count: 1500)
            for start in stride(from: 0, to: corpus.count, by: 500) {
                _ = try await store.ingest(Array(corpus[start..<min(start + 500, corpus.count)]))
            }
            let identity = try IdentityFile.loadOrCreate(at: DataDirectory(url: node.data).identityURL).0
            let author = try await store.logIdentity(in: TestNode.networkGroup, of: identity)
            var random = SplitMix64(seed: 9)
            var hashes: [AssetHash] = []
            for index in 0..<photos {
                let bytes = random.bytes(count: 2 << 20)
                let hash = try await store.storePhoto(Data(bytes))
                hashes.append(hash)
                let photo = PhotoReference(
                    sha256: hash,
                    byteCount: UInt64(bytes.count),
                    mediaType: .png,
                    width: 1,
                    height: 1
                )
                _ = try await store.append(.post(caption: "photo \(index)", photo: photo, location: nil), by: author)
            }
            return hashes
        }
    }

    /// Bytes in B's partial photo files.
    static func partialBytes(_ node: TestNode) -> Int {
        let tmp = node.data.appendingPathComponent("photos/tmp")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: tmp.path)) ?? []
        return names.filter { $0.hasSuffix(".partial") }.reduce(0) { total, name in
            let size = try? FileManager.default.attributesOfItem(atPath: tmp.appendingPathComponent(name).path)[.size]
            return total + ((size as? Int) ?? 0)
        }
    }

    /// Photos the node has recorded as held.
    static func heldPhotos(_ node: TestNode) async throws -> Int {
        try await node.withStore { try await $0.counts().photos }
    }

    /// What a restart finds after a crash: a sound database, only whole photos at their names (each hashing to it,
    /// each recorded one among them), and every record the node acknowledged. Returns the photos held. Files named
    /// in `skipping` were hashed after an earlier kill (a file at its final name is never written again); the
    /// files hashed now are added to it.
    @discardableResult
    static func expectSound(
        _ node: TestNode,
        acked: VectorClock,
        run: Int,
        skipping checked: inout Set<String>
    ) async throws -> Int {
        let (problems, clock, held) = try await node.withStore { store in
            (try await store.integrityCheck(), try await store.clock(), try await store.counts().photos)
        }
        #expect(problems.isEmpty, "run \(run): integrity_check: \(problems)")
        let photos = node.data.appendingPathComponent("photos")
        var files = 0
        for shard in (try? FileManager.default.contentsOfDirectory(atPath: photos.path)) ?? []
        where shard.count == 2 {
            let directory = photos.appendingPathComponent(shard)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
                files += 1
                guard checked.insert(name).inserted else { continue }
                let bytes = try Data(contentsOf: directory.appendingPathComponent(name))
                let digest = AssetHash.of(bytes).hex
                #expect(digest == name, "run \(run): photos/\(shard)/\(name) hashes to \(digest)")
            }
        }
        // A photo is recorded only once its file is in place (a file may be in place and not yet recorded).
        #expect(held <= files, "run \(run): \(held) photos recorded, \(files) files")
        for (author, sequence) in acked.heads {
            #expect(
                clock[author] >= sequence,
                "run \(run): \(author.short) acknowledged through \(sequence), held through \(clock[author])"
            )
        }
        return held
    }
}

/// Reads the frames a node sends through a ``CountingProxy``, connection by connection, and merges the clocks of
/// its ACKs: what it has told its peer it stored.
final class AckWatcher: Sendable {
    private let state = Mutex<(decoders: [Int: FrameDecoder], clock: VectorClock, count: Int)>(([:], VectorClock(), 0))

    func received(_ bytes: ArraySlice<UInt8>, on connection: Int) {
        state.withLock { state in
            var decoder = state.decoders[connection] ?? FrameDecoder()
            decoder.append(bytes)
            while let message = try? decoder.next() {
                if case .ack(let clock) = message {
                    state.clock = state.clock.merging(clock)
                    state.count += 1
                }
            }
            state.decoders[connection] = decoder
        }
    }

    var clock: VectorClock { state.withLock { $0.clock } }
    var count: Int { state.withLock { $0.count } }
}
