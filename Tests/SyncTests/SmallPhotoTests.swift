import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// Small photos (at most 64 KiB) between real nodes: asked for many at once (PHOTOS_WANT), kept in the store rather
/// than as files, served from there to the next peer, to the API and to `export`, and erased with their post.
@Suite("Small photos come whole, many at once, and live in the store", .serialized)
struct SmallPhotoTests {
    /// Posts `count` small photos of random bytes (a 1 x 1 "PNG" each, as the bench does) on the node, whose store
    /// must not be open elsewhere. Returns each post's id and its photo's bytes.
    static func post(_ count: Int, size: Int, on node: TestNode, seed: UInt64) async throws -> [(PostID, Data)] {
        try await node.withStore { store in
            let identity = try IdentityFile.loadOrCreate(at: DataDirectory(url: node.data).identityURL).0
            let author = try await store.logIdentity(in: TestNode.networkGroup, of: identity)
            var random = SplitMix64(seed: seed)
            var posted: [(PostID, Data)] = []
            for index in 0..<count {
                let bytes = Data(random.bytes(count: size))
                let hash = try await store.storePhoto(bytes)
                let photo = PhotoReference(
                    sha256: hash,
                    byteCount: UInt64(size),
                    mediaType: .png,
                    width: 1,
                    height: 1
                )
                let record = try await store.append(
                    .post(caption: "small \(index)", photo: photo, location: nil),
                    by: author
                )
                posted.append((PostID(record.id), bytes))
            }
            return posted
        }
    }

    /// Files under the node's photo shards (`photos/ab/…`).
    static func photoFiles(_ node: TestNode) -> Int {
        let photos = node.data.appendingPathComponent("photos")
        let shards = ((try? FileManager.default.contentsOfDirectory(atPath: photos.path)) ?? []).filter {
            $0.count == 2
        }
        return shards.reduce(0) { total, shard in
            total
                + ((try? FileManager.default.contentsOfDirectory(atPath: photos.appendingPathComponent(shard).path))?
                    .count ?? 0)
        }
    }

    @Test("300 small photos reach B in the store, B passes them to C, and a delete erases one everywhere")
    func throughTheStore() async throws {
        let (a, b, c) = (try await TestNode("a"), try await TestNode("b"), try await TestNode("c"))
        defer { for node in [a, b, c] { node.remove() } }
        let posted = try await Self.post(300, size: 2048, on: a, seed: 32)
        try await a.start()
        try await b.start(peers: [a])
        try await eventually("b holds every photo", timeout: .seconds(60)) {
            try await b.withStore { try await $0.counts().photos } == posted.count
        }
        // Kept in the store, each its own bytes; no file was made for any.
        for (_, bytes) in posted.prefix(20) {
            #expect(try await b.withStore { try await $0.photoContent(AssetHash.of(bytes)) } == bytes)
        }
        #expect(Self.photoFiles(b) == 0, "no photo file on b")
        #expect(b.logText.contains("asking it for photos one by one") == false)
        // Served from the store: to the API (whole, and a range), and to a third node through B alone.
        let (first, firstBytes) = posted[0]
        let hash = AssetHash.of(firstBytes)
        let whole = try await b.http.get("/api/photos/\(hash.hex)")
        #expect(whole.status == 200 && whole.body == firstBytes && whole.headers["etag"] == "\"\(hash.hex)\"")
        let range = try await b.http.get("/api/photos/\(hash.hex)", headers: ["Range": "bytes=10-19"])
        #expect(range.status == 206 && range.body == firstBytes[10...19])
        try await c.start(peers: [b])
        try await eventually("c holds every photo, from b", timeout: .seconds(60)) {
            try await c.withStore { try await $0.counts().photos } == posted.count
        }
        // `export` writes the bytes of a photo kept in the store.
        let folder = b.data.appendingPathComponent("exported")
        try await b.cli("export", first.hex, "--to", folder.path)
        let exported = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".png") }
        #expect(exported.count == 1)
        #expect(try Data(contentsOf: folder.appendingPathComponent(exported.first ?? "")) == firstBytes)
        // A delete on A erases the photo's bytes on B and C: no row, and not in the database's files.
        let (gone, goneBytes) = posted[1]
        try await a.cli("delete", gone.hex)
        for node in [b, c] {
            try await eventually("\(node.name) erased the photo", timeout: .seconds(30)) {
                let content = try await node.withStore { try await $0.photoContent(AssetHash.of(goneBytes)) }
                let files = try SyncIntegrationTests.ErasureTests.databaseBytes(node)
                return content == nil && files.range(of: goneBytes) == nil
            }
        }
        for node in [a, b, c] { try await node.stop() }
    }
}
