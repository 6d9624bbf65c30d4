import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// Batched writes of small photos under SIGKILL (ARCHITECTURE.md, "Store and photo files"): a real node is killed at
/// random points of a transfer of many small photos (PHOTOS, each answer recorded in one transaction), again and
/// again, and after every kill its store is checked as a restart would find it.
@Suite("A node killed while small photos come in batches", .serialized)
struct SmallPhotoCrashTests {
    static let kills = 50
    /// Small photos on A: asked for 4 at a time (`--test-photos-per-want`), four PHOTOS_WANTs in flight, each answer
    /// sent after `delay` ms, so that about 50 photos a second flow: a batch lands every few tens of ms, and the set
    /// outlasts the 50 runs.
    static let photos = 3000
    static let delay = 300

    @Test(
        "50 SIGKILLs while small photos come: integrity_check passes, every kept photo hashes to its name, nothing acknowledged is missing, and the transfer completes after a restart"
    )
    func killedDuringBatches() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        defer {
            a.remove()
            b.remove()
        }
        let posted = try await SmallPhotoTests.post(Self.photos, size: 1024, on: a, seed: 77)
        let acks = AckWatcher()
        try await a.start(extra: ["--insecure-plaintext", "--test-photo-chunk-delay-ms", "\(Self.delay)"])
        let proxy = try CountingProxy(to: a.port) { connection, bytes, up in
            if up { acks.received(bytes, on: connection) }
        }
        defer { proxy.close() }
        let bOptions = [
            "--insecure-plaintext", "--peer", "127.0.0.1:\(proxy.port)", "--no-api", "--test-photos-per-want", "4",
        ]
        var random = SplitMix64(seed: 2027)
        var held = 0
        var grew = 0
        for kill in 1...Self.kills {
            try await b.start(extra: bOptions)
            let before = held
            // At least one batch of this run is recorded (or the set is complete), then a random moment more.
            try await eventually("a batch reaches b (run \(kill))", timeout: .seconds(60)) {
                let now = try await PhotoCrashTests.heldPhotos(b)
                return now > before || now == posted.count
            }
            try await Task.sleep(for: .milliseconds(Int(random.next() % 300)))
            try await b.crash()
            held = try await Self.expectSound(b, acked: acks.clock, run: kill)
            if held > before { grew += 1 }
        }
        #expect(grew == Self.kills, "each run recorded photos before its kill: \(grew) of \(Self.kills)")
        #expect(held < posted.count, "the set was still incomplete at the last kill: \(held) of \(posted.count)")
        #expect(acks.count > 0, "b acknowledged records")

        // After a restart, the transfer completes, every photo whole and right.
        try await b.start(extra: bOptions)
        try await eventually("every photo reaches b after the restart", timeout: .seconds(180)) {
            try await PhotoCrashTests.heldPhotos(b) == posted.count
        }
        try await b.stop()
        _ = try await Self.expectSound(b, acked: acks.clock, run: Self.kills + 1)
        let kept = try await b.withStore { store in
            var same = 0
            for (_, bytes) in posted where try await store.photoContent(AssetHash.of(bytes)) == bytes { same += 1 }
            return same
        }
        #expect(kept == posted.count, "every photo's bytes are in b's store")
        #expect(try await b.clock().heads == (try await a.clock()).heads, "b holds every record of the network")
        try await a.stop()
    }

    /// What a restart finds after a crash: a sound database, every photo kept in it hashing to its name, none
    /// recorded without its bytes, and every record the node acknowledged. Returns the photos held.
    static func expectSound(_ node: TestNode, acked: VectorClock, run: Int) async throws -> Int {
        let (problems, photoProblems, clock, held) = try await node.withStore { store in
            (
                try await store.integrityCheck(), try await store.checkSmallPhotos(), try await store.clock(),
                try await store.counts().photos
            )
        }
        #expect(problems.isEmpty, "run \(run): integrity_check: \(problems)")
        #expect(photoProblems.isEmpty, "run \(run): \(photoProblems)")
        for (author, sequence) in acked.heads {
            #expect(
                clock[author] >= sequence,
                "run \(run): \(author.short) acknowledged through \(sequence), held through \(clock[author])"
            )
        }
        return held
    }
}
