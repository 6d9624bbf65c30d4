import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("Real nodes on loopback: convergence, catch-up, partitions, photos, forks", .serialized)
struct SyncIntegrationTests {
    @Test("two nodes converge on posts, comments, edits, deletes and photos, with identical photo bytes")
    func twoNodes() async throws {
        let a = try await TestNode("alice")
        let b = try await TestNode("bob")
        defer {
            a.remove()
            b.remove()
        }
        // --keep-metadata: the photo as it is (GPS included), so that both sides can be compared with the fixture.
        let waterfall = try await a.cli(
            "post",
            a.fixture("waterfall.jpg"),
            "--caption",
            "Waterfall at dusk",
            "--keep-metadata"
        )
        let lake = try await a.cli("post", a.fixture("lake.png"), "--caption", "Lake")
        try await a.cli("comment", waterfall, "first")
        try await a.start()
        try await b.start(peers: [a])
        try await eventually("bob has alice's posts and photos") {
            try await b.withStore { store in
                let posts = try await store.feed(FeedQuery()).posts
                return posts.count == 2 && posts.allSatisfy(\.photo.available)
            }
        }
        // Writes on either side while connected: edits, deletes, comments, a new post.
        try await a.cli("edit", waterfall, "--caption", "Waterfall at dawn")
        let comment = try await b.cli("comment", waterfall, "from bob")
        try await a.cli("delete", lake)
        let forest = try await b.cli("post", b.fixture("forest.webp"), "--caption", "Forest")
        try await eventually("both nodes show the same feed") {
            let left = try await a.feedJSON()
            return left == (try await b.feedJSON()) && left.contains("Waterfall at dawn") && left.contains(forest)
                && !left.contains(lake) && left.contains("\"available\" : false") == false
        }
        let shownA = try await a.cli("show", waterfall, "--json")
        #expect(shownA == (try await b.cli("show", waterfall, "--json")))
        #expect(shownA.contains(comment))
        // The photo bytes are the same on both sides.
        for file in ["waterfall.jpg", "forest.webp"] {
            let original = try Data(contentsOf: URL(fileURLWithPath: a.fixture(file)))
            let hash = AssetHash.of(original)
            for node in [a, b] {
                #expect(try Data(contentsOf: try await node.photoFile(hash)) == original, "\(node.name) \(file)")
            }
        }
        #expect(try await a.clock() == (try await b.clock()))
        let peers = try await a.cli("peers", "--json")
        #expect(peers.contains("\"name\" : \"bob\"") && peers.contains("\"state\" : \"connected\""))
        #expect(try await a.cli("status").contains("peers:    1 connected, 1 met"))
        try await a.stop()
        try await b.stop()
        // After a clean stop, the peer is recorded as disconnected, with the session's traffic.
        let after =
            try JSONSerialization.jsonObject(with: Data(try await b.cli("peers", "--json").utf8)) as? [String: Any]
        let alice = try #require((after?["peers"] as? [[String: Any]])?.first)
        #expect(alice["state"] as? String == "disconnected")
        #expect((alice["recordsIn"] as? Int ?? 0) > 0 && (alice["bytesIn"] as? Int ?? 0) > 50_000)
    }

    @Test("three nodes in a line converge through the middle one")
    func lineOfThree() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        let c = try await TestNode("c")
        defer { for node in [a, b, c] { node.remove() } }
        try await a.start()
        try await b.start(peers: [a])
        try await c.start(peers: [b])
        try await eventually("b connected to both") {
            try await b.cli("peers", "--json").components(separatedBy: "\"connected\"").count == 3
        }
        let post = try await a.cli("post", a.fixture("lake.png"), "--caption", "From A")
        try await eventually("the post reaches C with its photo") {
            try await c.withStore { try await $0.post(PostID(hex: post)!)?.post.photo.available == true }
        }
        let comment = try await c.cli("comment", post, "From C")
        try await eventually("the comment reaches A") {
            try await a.withStore { try await $0.post(PostID(hex: post)!)?.comments.map(\.id.hex) == [comment] }
        }
        #expect(try await a.feedJSON() == (try await c.feedJSON()))
        for node in [a, b, c] { try await node.stop() }
    }

    @Test("a node that was offline catches up when it returns")
    func offlineCatchUp() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        defer {
            a.remove()
            b.remove()
        }
        try await a.start()
        try await b.start(peers: [a])
        let first = try await a.cli("post", a.fixture("lake.png"), "--caption", "before")
        try await eventually("b has the first post") { try await b.postIDs().map(\.hex) == [first] }
        try await b.stop()
        let second = try await a.cli("post", a.fixture("waterfall.jpg"), "--caption", "while b was away")
        for index in 0..<3 { try await a.cli("comment", first, "comment \(index)") }
        try await b.start(peers: [a])
        try await eventually("b caught up") {
            let caughtUp = try await b.clock() == (try await a.clock())
            let photo = try await b.withStore { try await $0.post(PostID(hex: second)!)?.post.photo.available }
            return caughtUp && photo == true
        }
        #expect(try await a.feedJSON() == (try await b.feedJSON()))
        try await a.stop()
        try await b.stop()
    }

    @Test("concurrent writes on both sides of a partition converge when it heals")
    func partition() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        defer {
            a.remove()
            b.remove()
        }
        try await a.start()
        try await b.start(peers: [a])
        let shared = try await a.cli("post", a.fixture("lake.png"), "--caption", "shared")
        try await eventually("b has the shared post") { try await b.postIDs().map(\.hex) == [shared] }
        // Partition: stop B, and write on both sides (B writes offline through the CLI).
        try await b.stop()
        try await a.cli("comment", shared, "a while apart")
        try await a.cli("post", a.fixture("forest.webp"), "--caption", "a's side")
        try await b.cli("comment", shared, "b while apart")
        try await b.cli("post", b.fixture("anim.gif"), "--caption", "b's side")
        try await b.cli(
            "edit",
            try await b.cli("post", b.fixture("waterfall.jpg"), "--caption", "b typo"),
            "--caption",
            "b fixed"
        )
        #expect(try await a.feedJSON() != (try await b.feedJSON()))
        // Heal.
        try await b.start(peers: [a])
        try await eventually("identical feeds") {
            let left = try await a.feedJSON()
            return left == (try await b.feedJSON()) && !left.contains("\"available\" : false")
        }
        #expect(try await a.cli("show", shared, "--json") == (try await b.cli("show", shared, "--json")))
        #expect(try await a.feedJSON().contains("b fixed"))
        try await a.stop()
        try await b.stop()
    }

    /// A valid PNG of about `megabytes` MiB: signature, IHDR, one big IDAT of random bytes, IEND.
    /// A valid PNG of random pixels (incompressible, so about `megabytes` MiB): 1024 px wide, RGB, stored in
    /// uncompressed deflate blocks, with real CRCs, so that `post` (which decodes every pixel) accepts it.
    static func bigPNG(megabytes: Int, at url: URL) throws {
        func be32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
        func crc32(_ bytes: [UInt8]) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            }
            return ~crc
        }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            be32(UInt32(data.count)) + Array(type.utf8) + data + be32(crc32(Array(type.utf8) + data))
        }
        let width = 1024
        let height = (megabytes << 20) / (3 * width + 1) + 1
        var random = SystemRandomNumberGenerator()
        var raw: [UInt8] = []
        raw.reserveCapacity(height * (3 * width + 1))
        for _ in 0..<height {
            raw.append(0)
            for _ in 0..<(3 * width / 8) { raw += withUnsafeBytes(of: random.next(), Array.init) }
        }
        var zlib: [UInt8] = [0x78, 0x01]
        var start = 0
        while start < raw.count {
            let end = min(start + 65_535, raw.count)
            let length = UInt16(end - start)
            zlib += [end == raw.count ? 1 : 0, UInt8(length & 0xFF), UInt8(length >> 8)]
            zlib += [UInt8(~length & 0xFF), UInt8(~length >> 8)]
            zlib += raw[start..<end]
            start = end
        }
        var (a, b): (UInt32, UInt32) = (1, 0)
        for byte in raw {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        zlib += be32(b << 16 | a)
        let ihdr = be32(UInt32(width)) + be32(UInt32(height)) + [8, 2, 0, 0, 0]
        let bytes =
            [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr) + chunk("IDAT", zlib)
            + chunk("IEND", [])
        try Data(bytes).write(to: url)
    }

    @Test("an interrupted photo transfer resumes from where it stopped")
    func photoResume() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        defer {
            a.remove()
            b.remove()
        }
        let image = a.data.appendingPathComponent("big.png")
        try Self.bigPNG(megabytes: 8, at: image)
        let post = try await a.cli("post", image.path, "--caption", "big")
        let original = try Data(contentsOf: image)
        let hash = AssetHash.of(original)
        // A sends slowly (fault injection), so that B can be cut off mid-transfer.
        try await a.start(extra: ["--test-photo-chunk-delay-ms", "40"])
        try await b.start(peers: [a])
        let partial = b.data.appendingPathComponent("photos/tmp/\(hash.hex).partial")
        // Generous: on a loaded machine the thumbnail exchange and the first chunks can take a while.
        try await eventually("part of the photo arrived", timeout: .seconds(90)) {
            let size = (try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int) ?? 0
            return size >= 2 << 20
        }
        try await b.crash()
        let cut = try FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int ?? 0
        #expect(cut > 0 && cut < original.count)
        try await b.start(peers: [a])
        try await eventually("the photo is complete on b", timeout: .seconds(60)) {
            try await b.withStore { try await $0.post(PostID(hex: post)!)?.post.photo.available == true }
        }
        let stored = b.data.appendingPathComponent("photos/\(hash.hex.prefix(2))/\(hash.hex)")
        #expect(try Data(contentsOf: stored) == original)
        #expect(b.logText.contains("resuming a photo"), "b's log: \(b.logText)")
        // It resumed from exactly the bytes it already had, not from zero.
        #expect(b.logText.contains("photo.offset=\(cut)"), "b's log: \(b.logText)")
        try await a.stop()
        try await b.stop()
    }

    @Test("a photo over --max-photo-mb is skipped, the post shows without it, and 'fetch' gets it on demand")
    func onDemandPhoto() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        defer {
            a.remove()
            b.remove()
        }
        let image = a.data.appendingPathComponent("big.png")
        try Self.bigPNG(megabytes: 2, at: image)
        let big = try await a.cli("post", image.path, "--caption", "big")
        let small = try await a.cli("post", a.fixture("lake.png"), "--caption", "small")
        try await a.start()
        try await b.start(peers: [a], extra: ["--max-photo-mb", "1", "--log-level", "debug"])
        try await eventually("the small photo arrived") {
            try await b.withStore { try await $0.post(PostID(hex: small)!)?.post.photo.available == true }
        }
        // B refuses the big photo when it comes to it, and says so: that line is the event to wait for.
        try await eventually("b refused the big photo") { b.logText.contains("photo larger than --max-photo-mb") }
        #expect(try await b.withStore { try await $0.post(PostID(hex: big)!)?.post.photo.available } == false)
        #expect(try await b.cli("show", big).contains("(not here yet)"))
        let path = try await b.cli("fetch", String(big.prefix(12)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == (try Data(contentsOf: image)))
        #expect(try await b.withStore { try await $0.post(PostID(hex: big)!)?.post.photo.available } == true)
        // Without a running node, fetch says so.
        try await b.stop()
        let offline = try await NodeBinary.run(["fetch", big, "--data", b.data.path])
        #expect(offline.status == 1 && offline.stderr.contains("no node is running"))
        try await a.stop()
    }

    @Test(
        "signed thumbnails arrive before photos and are kept as they are, alone when the photo is over --max-photo-mb"
    )
    func thumbnails() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        defer {
            a.remove()
            b.remove()
        }
        let image = a.data.appendingPathComponent("big.png")
        try Self.bigPNG(megabytes: 2, at: image)
        let big = try await a.cli("post", image.path, "--caption", "big")
        let small = try await a.cli("post", a.fixture("waterfall.jpg"), "--caption", "small", "--keep-metadata")
        let bigHash = AssetHash.of(try Data(contentsOf: image))
        let smallHash = AssetHash.of(try Data(contentsOf: URL(fileURLWithPath: a.fixture("waterfall.jpg"))))
        func thumbs(_ node: TestNode, _ hash: AssetHash) -> URL {
            node.data.appendingPathComponent("photos/thumbs/\(hash.hex.prefix(2))")
        }
        // `post` made A's thumbnails at once.
        for hash in [bigHash, smallHash] {
            #expect(
                FileManager.default.fileExists(atPath: thumbs(a, hash).appendingPathComponent("\(hash.hex).jpg").path)
            )
        }
        // A's port is known once it ran; B dials it, with `watch` listening before A is back.
        try await a.start()
        try await a.stop()
        try await b.start(peers: [a], extra: ["--max-photo-mb", "1", "--log-level", "debug"])
        let watcher = try Watcher(data: b.data)
        defer { watcher.stop() }
        try await eventually("watch is subscribed") { watcher.lines.contains { $0.contains("\"watching\"") } }
        try await a.start()
        // Each post commits to A's thumbnail (PROTOCOL.md §2.5): B keeps it as it is, as its own; a thumbnail that
        // B checked whole and re-encoded (a provisional one) would not have A's bytes.
        func own(_ node: TestNode, _ hash: AssetHash) -> URL {
            thumbs(node, hash).appendingPathComponent("\(hash.hex).jpg")
        }
        try await eventually("the big photo's thumbnail arrived") {
            FileManager.default.fileExists(atPath: own(b, bigHash).path)
        }
        #expect(try Data(contentsOf: own(b, bigHash)) == Data(contentsOf: own(a, bigHash)))
        #expect(
            !FileManager.default.fileExists(
                atPath: thumbs(b, bigHash).appendingPathComponent("\(bigHash.hex).peer.jpg").path
            )
        )
        // Its photo did not come (over --max-photo-mb): only the thumbnail is here.
        try await eventually("b refused the big photo") { b.logText.contains("photo larger than --max-photo-mb") }
        #expect(try await b.withStore { try await $0.post(PostID(hex: big)!)?.post.photo.available } == false)
        // The small photo came, and its thumbnail is A's: B made none of its own (no "thumbnail made" in its log).
        try await eventually("the small photo and A's thumbnail of it") {
            try await b.withStore { try await $0.post(PostID(hex: small)!)?.post.photo.available == true }
                && FileManager.default.fileExists(atPath: own(b, smallHash).path)
        }
        #expect(try Data(contentsOf: own(b, smallHash)) == Data(contentsOf: own(a, smallHash)))
        #expect(
            !FileManager.default.fileExists(
                atPath: thumbs(b, smallHash).appendingPathComponent("\(smallHash.hex).peer.jpg").path
            )
        )
        // watch reports thumbnailArrived with the photo's SHA-256, and the big one's before any photoArrived of it.
        try await eventually("watch shows both thumbnails") {
            Set(
                watcher.events.filter { $0["type"] as? String == "thumbnailArrived" }.compactMap {
                    $0["sha256"] as? String
                }
            )
            .isSuperset(of: [bigHash.hex, smallHash.hex])
        }
        let types = watcher.events.compactMap { event -> String? in
            guard let type = event["type"] as? String, event["sha256"] as? String == smallHash.hex else { return nil }
            return type
        }
        // The small photo: its photo, and A's thumbnail.
        #expect(types.contains("photoArrived") && types.contains("thumbnailArrived"), "\(types)")
        #expect(
            !watcher.events.contains {
                $0["type"] as? String == "photoArrived" && $0["sha256"] as? String == bigHash.hex
            }
        )
        try await a.stop()
        try await b.stop()
        #expect(b.logText.contains("thumbnail kept as its author signed it"))
        #expect(!b.logText.contains("thumbnail made"), "B decoded a photo to make a thumbnail of its own")
    }

    @Test("two different records for one author and sequence are detected as a fork and shown in status")
    func fork() async throws {
        let a = try await TestNode("a")
        // The twin is a copy of A's data directory: the same identity and the same log key in the test network,
        // then a log of its own. Both sign different records at the same sequence numbers (after their shared
        // self-add and name, A: a post; the twin: two posts), and the twin's log is longer.
        let twinData = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-sync-twin-\(UUID())")
        try FileManager.default.copyItem(at: a.data, to: twinData)
        // Named as A is, so that its `init` signs no new name.
        let twin = try await TestNode("a", data: twinData)
        let b = try await TestNode("b")
        defer { for node in [a, twin, b] { node.remove() } }
        try await a.cli("post", a.fixture("lake.png"), "--caption", "the original")
        try await twin.cli("post", twin.fixture("anim.gif"), "--caption", "the impostor")
        try await twin.cli("post", twin.fixture("forest.webp"), "--caption", "the impostor again")
        try await a.start()
        try await b.start(peers: [a])
        try await eventually("b has a's log") { try await b.clock() == (try await a.clock()) }
        try await a.stop()
        // B now meets the twin: its third record links to a second record B does not hold.
        try await twin.start()
        try await b.stop()
        try await b.start(peers: [twin])
        try await eventually("b detected the fork") {
            try await b.withStore { try await $0.counts().forks } >= 1
        }
        let status = try await b.cli("status", "--json")
        #expect(status.contains("previous does not match the held record"), "\(status)")
        #expect(try await b.cli("status").contains("detected (refused records kept as evidence)"))
        // The fork is kept out: B still shows only the original's post.
        #expect(try await b.withStore { try await $0.feed(FeedQuery()).posts.map(\.caption) } == ["the original"])
        for node in [twin, b] { try await node.stop() }
    }

    @Test("both nodes dialling each other at once end up with one session")
    func simultaneousDial() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        defer {
            a.remove()
            b.remove()
        }
        try await a.start()
        try await b.start()
        try await a.stop()
        try await b.stop()
        // Both now know each other's port; each dials the other.
        try await a.start(peers: [b])
        try await b.start(peers: [a])
        try await eventually("connected") {
            let aConnected = try await a.cli("peers", "--json").contains("\"connected\"")
            let bConnected = try await b.cli("peers", "--json").contains("\"connected\"")
            return aConnected && bConnected
        }
        let post = try await a.cli("post", a.fixture("lake.png"), "--caption", "once")
        try await eventually("the post crossed") { try await b.postIDs().map(\.hex) == [post] }
        // One TCP connection between them (each connection shows twice in /proc/net/tcp: both ends), once the
        // duplicate has closed (a fixed 2 s wait before one look failed once on a clean clone: 4 sockets).
        try await eventually("one TCP connection between them", timeout: .seconds(20)) {
            Self.established(ports: [a.port, b.port]) == 2
        }
        try await a.stop()
        try await b.stop()
    }

    /// Established TCP sockets on loopback whose local or remote port is one of `ports`.
    static func established(ports: [Int]) -> Int {
        // /proc files report a size of 0: read them to the end rather than by size.
        let handle = FileHandle(forReadingAtPath: "/proc/net/tcp")
        let table = String(decoding: handle?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        return table.split(separator: "\n").dropFirst().filter { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 3, fields[3] == "01" else { return false }
            let local = Int(fields[1].split(separator: ":").last ?? "", radix: 16) ?? -1
            let remote = Int(fields[2].split(separator: ":").last ?? "", radix: 16) ?? -1
            return ports.contains(local) || ports.contains(remote)
        }.count
    }

    @Test("a node remembers the peers it met and dials them on start")
    func rememberedPeers() async throws {
        let a = try await TestNode("a")
        let b = try await TestNode("b")
        defer {
            a.remove()
            b.remove()
        }
        try await a.start()
        try await b.start(peers: [a])
        try await eventually("met") { try await b.cli("peers", "--json").contains("\"connected\"") }
        try await b.stop()
        let post = try await a.cli("post", a.fixture("lake.png"), "--caption", "while b was away")
        // No --peer this time: B dials A from its memory.
        try await b.start(remembered: true)
        try await eventually("b dialled a by itself and caught up") { try await b.postIDs().map(\.hex) == [post] }
        try await a.stop()
        try await b.stop()
    }

    @Test("a second run on the same data directory is refused while the first holds the lock")
    func lock() async throws {
        let a = try await TestNode("a")
        defer { a.remove() }
        try await a.start()
        let second = try await NodeBinary.run(["run", "--data", a.data.path, "--port", "0", "--listen", "127.0.0.1"])
        #expect(second.status != 0)
        #expect(second.stderr.contains("another continuum-node is already running"), "\(second.stderr)")
        // Commands keep working while the node runs.
        #expect(try await a.cli("feed") == "No posts yet.")
        try await a.crash()
        // A crash releases the lock.
        try await a.start()
        try await a.stop()
    }
}
