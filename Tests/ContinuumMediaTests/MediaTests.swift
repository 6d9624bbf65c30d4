import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Logging
import Testing

@testable import ContinuumMedia

private let fixtures = NodeBinary.fixtures
private let media = fixtures.appendingPathComponent("media")

private func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

@Suite struct MetadataTests {
    @Test func orientationDateWithOffsetAndSouthernGPS() throws {
        let (info, metadata) = try PhotoIntake.inspect(file: media.appendingPathComponent("rotated-gps.jpg"))
        #expect(info.mediaType == .jpeg)
        #expect(info.width == 640 && info.height == 480)
        #expect(metadata.orientation == 6)
        // 07:08:09 at +02:00.
        #expect(metadata.takenAt == date("2023-05-06T05:08:09Z"))
        let location = try #require(metadata.location)
        #expect(abs(location.latitude - -(33 + 51 / 60 + 35.9 / 3600)) < 1e-6)
        #expect(abs(location.longitude - (151 + 12 / 60 + 40 / 3600)) < 1e-6)
    }

    @Test func dateWithoutOffsetIsUTCAndWesternGPS() throws {
        let metadata = try PhotoIntake.metadata(file: media.appendingPathComponent("west-utc.jpg"))
        #expect(metadata.orientation == 1)
        #expect(metadata.takenAt == date("2021-12-31T23:59:58Z"))
        let location = try #require(metadata.location)
        #expect(abs(location.latitude - (40 + 41 / 60 + 21 / 3600)) < 1e-6)
        #expect(abs(location.longitude - -(74 + 2 / 60 + 40 / 3600)) < 1e-6)
    }

    @Test func sharedFixture() throws {
        let (_, metadata) = try PhotoIntake.inspect(file: fixtures.appendingPathComponent("waterfall.jpg"))
        #expect(metadata.orientation == 6)
        #expect(metadata.takenAt == date("2024-07-14T16:20:00Z"))
        #expect(metadata.location == Coordinate(latitude: 48 + 51 / 60 + 24 / 3600, longitude: 2 + 21 / 60 + 3 / 3600))
    }

    @Test func noExif() throws {
        for name in ["lake.png", "forest.webp", "anim.gif"] {
            let (_, metadata) = try PhotoIntake.inspect(file: fixtures.appendingPathComponent(name))
            #expect(metadata == PhotoMetadata(), "\(name)")
        }
    }

    @Test func exifText() {
        #expect(
            ExifText.value("48/1 51/1 747/25 (48, 51, 29.88, Rational, 3 components, 24 bytes)") == "48/1 51/1 747/25"
        )
        #expect(ExifText.degrees("48/1 51/1 747/25").map { abs($0 - 48.858300) < 1e-6 } == true)
        #expect(ExifText.degrees("48/1 51/0 747/25") == nil)
        #expect(ExifText.degrees("48/1 51/1") == nil)
        #expect(ExifText.date("0000:00:00 00:00:00", offset: nil) == nil)
        #expect(ExifText.date("2023:02:30 10:00:00", offset: nil) == nil)
        #expect(ExifText.date("2023:01:02 03:04:05", offset: "-05:30") == date("2023-01-02T08:34:05Z"))
        #expect(ExifText.offsetSeconds("+2:00") == nil)
        #expect(
            ExifText.coordinate(latitude: "91/1 0/1 0/1", latitudeRef: "N", longitude: "0/1 0/1 0/1", longitudeRef: "E")
                == nil
        )
        #expect(
            Vips.cleanError("VipsJpeg: Premature end of input file\nVipsJpeg: Premature end of input file\n")
                == "Premature end of input file"
        )
    }
}

@Suite struct DamagedPhotoTests {
    @Test(arguments: ["truncated.jpg", "media/garbage-after-header.jpg"])
    func damagedIsRefused(name: String) throws {
        // inspect: the header check may find it first (truncated.jpg lacks its end-of-image marker).
        let inspected = #expect(throws: MediaError.self) {
            try PhotoIntake.inspect(file: fixtures.appendingPathComponent(name))
        }
        #expect(inspected?.kind == .damaged)
        // The full decode finds it in any case.
        let error = #expect(throws: MediaError.self) {
            try PhotoIntake.checkDecodable(file: fixtures.appendingPathComponent(name))
        }
        let message = try #require(error?.message)
        #expect(message.hasPrefix("the image is damaged: "), "\(message)")
        #expect(!message.contains("\n") && !message.contains("Vips"), "\(message)")
        print("\(name): \(message)")
    }

    @Test func notAnImage() {
        for (name, kind) in [("not-an-image.jpg", MediaError.Kind.notAnImage), ("does-not-exist.jpg", .unreadable)] {
            let error = #expect(throws: MediaError.self) {
                try PhotoIntake.inspect(file: fixtures.appendingPathComponent(name))
            }
            #expect(error?.kind == kind, "\(name)")
        }
    }

    @Test func wholePhotosPass() throws {
        for name in ["waterfall.jpg", "lake.png", "forest.webp", "anim.gif", "media/noise.jpg"] {
            try PhotoIntake.checkDecodable(file: fixtures.appendingPathComponent(name))
        }
    }
}

@Suite struct ThumbnailTests {
    @Test(arguments: [
        ("media/rotated-gps.jpg", 300, 400), ("waterfall.jpg", 300, 400), ("lake.png", 400, 300),
        ("media/noise.jpg", 400, 323), ("anim.gif", 320, 240),
    ])
    func thumbnail(name: String, width: Int, height: Int) throws {
        let data = try Thumbnailer.make(from: fixtures.appendingPathComponent(name))
        #expect(data.starts(with: [0xFF, 0xD8, 0xFF]))
        #expect(data.count < Thumbnailer.targetBytes)
        let described = try Thumbnailer.describe(jpeg: data)
        #expect(described.width == width && described.height == height, "\(described)")
        // Privacy: nothing of the original's EXIF (GPS included) is in the thumbnail.
        #expect(described.metadata.isEmpty, "\(described.metadata)")
        #expect(data.range(of: Data("Exif".utf8)) == nil)
        #expect(data.range(of: Data("GPS".utf8)) == nil)
    }

    @Test("a photo's bytes in memory give the thumbnail its file gives; damaged bytes and no image are refused")
    func thumbnailFromBytes() throws {
        for (name, width, height) in [("waterfall.jpg", 300, 400), ("lake.png", 400, 300), ("anim.gif", 320, 240)] {
            let bytes = try [UInt8](Data(contentsOf: fixtures.appendingPathComponent(name)))
            let data = try Thumbnailer.make(fromBytes: bytes)
            let described = try Thumbnailer.describe(jpeg: data)
            #expect(described.width == width && described.height == height, "\(name): \(described)")
            #expect(described.metadata.isEmpty, "\(name): \(described.metadata)")
            #expect(data.count < Thumbnailer.targetBytes)
        }
        // EXIF orientation applied and GPS gone, as from the file.
        let rotated = try [UInt8](Data(contentsOf: media.appendingPathComponent("rotated-gps.jpg")))
        let thumbnail = try Thumbnailer.make(fromBytes: rotated)
        #expect(try Thumbnailer.describe(jpeg: thumbnail).width == 300)
        #expect(thumbnail.range(of: Data("GPS".utf8)) == nil)
        let truncated = try [UInt8](Data(contentsOf: fixtures.appendingPathComponent("truncated.jpg")))
        let damaged = #expect(throws: MediaError.self) { try Thumbnailer.make(fromBytes: truncated) }
        // libvips's own failure (fail_on error: the JPEG ends early), not a refusal by signature.
        #expect(damaged?.kind == .other && damaged?.message.isEmpty == false, "\(String(describing: damaged))")
        let noImage = #expect(throws: MediaError.self) { try Thumbnailer.make(fromBytes: Array("1,2,3\n".utf8)) }
        #expect(noImage?.kind == .notAnImage, "\(String(describing: noImage))")
    }

    @Test("only the loaders of a post's formats read a photo: HEIC and WebP do, PPM, SVG and CSV do not")
    func onlyPhotoLoaders() throws {
        for name in ["media/gps.heic", "forest.webp"] {
            #expect(try Thumbnailer.make(from: fixtures.appendingPathComponent(name)).starts(with: [0xFF, 0xD8, 0xFF]))
        }
        // Formats libvips reads (its ppmload, svgload and csvload) but a post cannot hold: each made a thumbnail
        // before the other loaders were blocked.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-loaders-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let others: [(String, Data)] = [
            ("gray.ppm", Data("P6\n2 2\n255\n".utf8) + Data(repeating: 200, count: 12)),
            (
                "square.svg",
                Data(
                    "<svg xmlns='http://www.w3.org/2000/svg' width='8' height='8'><rect width='8' height='8'/></svg>"
                        .utf8
                )
            ),
            ("values.csv", Data("1,2,3\n4,5,6\n".utf8)),
        ]
        for (name, bytes) in others {
            let file = directory.appendingPathComponent(name)
            try bytes.write(to: file)
            let error = #expect(throws: MediaError.self, "\(name)") { try Thumbnailer.make(from: file) }
            #expect(error?.kind == .notAnImage, "\(name): \(String(describing: error))")
            #expect(error?.message == "not an image: the content is not JPEG, PNG, HEIC, WebP or GIF", "\(name)")
        }
    }

    @Test func noiseNeedsALowerQuality() throws {
        // At the first quality tried (82) the noise photo's thumbnail is over 50,000 bytes (about 66 KB).
        let data = try Thumbnailer.make(from: media.appendingPathComponent("noise.jpg"))
        #expect(data.count < Thumbnailer.targetBytes)
        #expect(data.count > 30_000)
    }

    @Test func peerThumbnails() throws {
        let ok = try [UInt8](Data(contentsOf: media.appendingPathComponent("thumb-ok.jpg")))
        let accepted = try Thumbnailer.accept(peerThumbnail: ok)
        #expect(try Thumbnailer.describe(jpeg: accepted).width == 400)
        // With EXIF (GPS) inside: accepted, and stripped.
        let withGPS = try [UInt8](Data(contentsOf: media.appendingPathComponent("west-utc.jpg")))
        #expect(throws: MediaError.self) { try Thumbnailer.accept(peerThumbnail: withGPS) }  // 640 px wide
        let refused: [(String, [UInt8])] = [
            ("too wide", try [UInt8](Data(contentsOf: media.appendingPathComponent("thumb-too-wide.jpg")))),
            ("PNG", try [UInt8](Data(contentsOf: fixtures.appendingPathComponent("lake.png")))),
            ("truncated", Array(ok.prefix(ok.count / 2))),
            ("too large", ok + [UInt8](repeating: 0, count: 65 * 1024)),
            ("empty", []),
        ]
        for (what, bytes) in refused {
            #expect(throws: MediaError.self, "\(what)") { try Thumbnailer.accept(peerThumbnail: bytes) }
        }
    }
}

@Suite struct ThumbnailServiceTests {
    final class Directory: Sendable {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-media-\(UUID().uuidString)")
        deinit { try? FileManager.default.removeItem(at: url) }
    }

    @Test func madeOnceCachedAndReplacingAPeersThumbnail() async throws {
        let directory = Directory()
        let assets = AssetStore(root: directory.url.appendingPathComponent("photos"))
        let service = ThumbnailService(assets: assets, logger: Logger(label: "test"))
        let photo = try Data(contentsOf: media.appendingPathComponent("rotated-gps.jpg"))
        let hash = AssetHash.of(photo)
        #expect(try await service.thumbnail(for: hash) == nil)

        // A peer's thumbnail first: provisional.
        let peer = try [UInt8](Data(contentsOf: media.appendingPathComponent("thumb-ok.jpg")))
        #expect(try await service.storeFromPeer(peer, for: hash))
        #expect(try await service.thumbnail(for: hash) == service.provisionalURL(for: hash))
        #expect(try await !service.storeFromPeer(peer, for: hash))

        // The original arrives: eight requests at once make one thumbnail, which replaces the peer's.
        try assets.store(photo)
        let urls = try await withThrowingTaskGroup(of: URL?.self) { group in
            for _ in 0..<8 { group.addTask { try await service.thumbnail(for: hash) } }
            return try await group.reduce(into: [URL?]()) { $0.append($1) }
        }
        #expect(Set(urls) == [service.ownURL(for: hash)])
        #expect(await service.madeCount == 1)
        #expect(!FileManager.default.fileExists(atPath: service.provisionalURL(for: hash).path))
        let own = try Data(contentsOf: service.ownURL(for: hash))
        #expect(try Thumbnailer.describe(jpeg: own).height == 400)
        #expect(service.ownURL(for: hash).path.hasSuffix("photos/thumbs/\(hash.hex.prefix(2))/\(hash.hex).jpg"))
        // Cached: asked again, not made again; nothing left in tmp.
        _ = try await service.thumbnail(for: hash)
        #expect(await service.madeCount == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: assets.temporaryDirectory.path).isEmpty)
    }

    @Test("a thumbnail is kept only while a live post shows its photo: not from a peer, not made, once erased")
    func erasedPhotoGetsNoThumbnail() async throws {
        let directory = Directory()
        let store = try ContinuumStore.open(DataDirectory(url: directory.url), logger: Logger(label: "test"))
        defer { try? store.close() }
        let service = ThumbnailService(store: store, logger: Logger(label: "test"))
        let photo = try Data(contentsOf: media.appendingPathComponent("rotated-gps.jpg"))
        let hash = AssetHash.of(photo)
        let peer = try [UInt8](Data(contentsOf: media.appendingPathComponent("thumb-ok.jpg")))

        // No post shows the photo (its post was deleted before this thumbnail came): dropped.
        #expect(try await !service.storeFromPeer(peer, for: hash))
        #expect(!service.hasThumbnail(hash))
        // Another photo's file is here, but no post shows it: no thumbnail is made (or kept).
        let unshown = try store.assets.store(Data(contentsOf: media.appendingPathComponent("noise.jpg")))
        #expect(try await service.thumbnail(for: unshown) == nil)
        #expect(!service.hasThumbnail(unshown))
        #expect(await service.madeCount == 0)

        // A live post shows the first photo: a peer's thumbnail is kept, then this node's own is made.
        var factory = RecordFactory(authorCount: 1, seed: UInt64.random(in: 1...UInt64.max))
        let photoReference = PhotoReference(
            sha256: hash,
            byteCount: UInt64(photo.count),
            mediaType: .jpeg,
            width: 1,
            height: 1
        )
        let post = factory.make(.post(caption: "shown", photo: photoReference, location: nil), by: 0)
        _ = try await store.ingest([post])
        #expect(try await service.storeFromPeer(peer, for: hash))
        #expect(try await service.thumbnail(for: hash) == service.provisionalURL(for: hash))
        try store.assets.store(photo)
        #expect(try await service.thumbnail(for: hash) == service.ownURL(for: hash))
        #expect(await service.madeCount == 1)
    }

    @Test("a peer's thumbnail that a live post commits to is kept as it is, and no thumbnail is made of its photo")
    func signedThumbnailKeptAsItIs() async throws {
        let directory = Directory()
        let assets = AssetStore(root: directory.url.appendingPathComponent("photos"))
        let signed = try Data(contentsOf: media.appendingPathComponent("thumb-ok.jpg"))
        let photo = try Data(contentsOf: media.appendingPathComponent("rotated-gps.jpg"))
        let hash = AssetHash.of(photo)
        // The post's commitment, as the store would answer it: the SHA-256 of the author's bytes.
        let committed = AssetHash.of(signed)
        let service = ThumbnailService(
            assets: assets,
            logger: Logger(label: "test"),
            committed: { asked in
                asked == hash ? [committed] : []
            }
        )

        // One byte changed in the scan data: not the signed thumbnail, so checked whole and kept as provisional.
        var changed = [UInt8](signed)
        changed[changed.count - 10] ^= 0x01
        #expect(try await service.storeFromPeer(changed, for: hash))
        #expect(try await service.thumbnail(for: hash) == service.provisionalURL(for: hash))
        #expect(await service.keptSignedCount == 0)

        // The signed bytes: kept as they are, as this node's own; the provisional one goes.
        #expect(try await service.storeFromPeer([UInt8](signed), for: hash))
        #expect(try Data(contentsOf: service.ownURL(for: hash)) == signed)
        #expect(!FileManager.default.fileExists(atPath: service.provisionalURL(for: hash).path))
        #expect(await service.keptSignedCount == 1)
        #expect(try await !service.storeFromPeer([UInt8](signed), for: hash))

        // The photo arrives: its thumbnail is the author's; none is made.
        try assets.store(photo)
        #expect(try await service.thumbnail(for: hash) == service.ownURL(for: hash))
        #expect(await service.madeCount == 0)
        #expect(try Data(contentsOf: service.ownURL(for: hash)) == signed)
    }

    /// Counts the service's looks at the store.
    actor Looks {
        private(set) var count = 0
        func add() { count += 1 }
    }

    @Test("a signed thumbnail with the hash the fetcher expected is checked with no look at the store; kept, one look")
    func expectedSignedThumbnail() async throws {
        let directory = Directory()
        let signed = try [UInt8](Data(contentsOf: media.appendingPathComponent("thumb-ok.jpg")))
        let hash = AssetHash.of(Data("a photo".utf8))
        let digest = AssetHash.of(Data(signed))
        let looks = Looks()
        let service = ThumbnailService(
            assets: AssetStore(root: directory.url.appendingPathComponent("photos")),
            logger: Logger(label: "test"),
            committed: { asked in
                await looks.add()
                return asked == hash ? [digest] : []
            }
        )
        let checked = try #require(try await service.check(peerThumbnail: signed, for: hash, expected: digest))
        #expect(await looks.count == 0)
        switch checked {
        case .signed(let bytes, let sha256): #expect(bytes == Data(signed) && sha256 == digest)
        case .provisional: Issue.record("the expected signed thumbnail was taken as provisional")
        }
        // The write still looks, after it: a post that signs another thumbnail may have come meanwhile.
        #expect(try await service.keep(checked, for: hash))
        #expect(await looks.count == 1)
        #expect(try Data(contentsOf: service.ownURL(for: hash)) == Data(signed))

        // An expectation that the bytes do not meet (another photo, which no post signs): the store is asked, and the
        // bytes are checked whole, as any peer's.
        let other = AssetHash.of(Data("another photo".utf8))
        let unsigned = try #require(
            try await service.check(peerThumbnail: signed, for: other, expected: AssetHash.of(Data("x".utf8)))
        )
        #expect(await looks.count == 2)
        if case .signed = unsigned { Issue.record("bytes no post of the photo signs were taken as signed") }
    }

    @Test("a signed thumbnail is not kept as it is when two posts of its photo sign different ones, or over 400 px")
    func signedThumbnailRefusals() async throws {
        let directory = Directory()
        let assets = AssetStore(root: directory.url.appendingPathComponent("photos"))
        let signed = try Data(contentsOf: media.appendingPathComponent("thumb-ok.jpg"))
        // A JPEG's start and a frame header of 800 × 600 (SOF0: length 17, 8 bits, height 0x0258, width 0x0320,
        // three components), and nothing of a scan.
        let large: [UInt8] =
            [0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x02, 0x58, 0x03, 0x20, 0x03]
            + [0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01, 0xFF, 0xD9]
        let (contested, tooLarge) = (AssetHash.of(Data("contested".utf8)), AssetHash.of(Data("large".utf8)))
        let commitments: [AssetHash: Set<AssetHash>] = [
            contested: [AssetHash.of(signed), AssetHash.of(Data("another author's".utf8))],
            tooLarge: [AssetHash.of(Data(large))],
        ]
        let service = ThumbnailService(
            assets: assets,
            logger: Logger(label: "test"),
            committed: { asked in
                commitments[asked] ?? []
            }
        )
        // Two posts of the photo sign different thumbnails: this one is checked whole and kept as provisional.
        #expect(try await service.storeFromPeer([UInt8](signed), for: contested))
        #expect(try await service.thumbnail(for: contested) == service.provisionalURL(for: contested))
        // Its frame header says 800 × 600: not kept as signed, and refused (it does not decode).
        #expect(Thumbnailer.frameSize(ofJPEG: large).map { [$0.width, $0.height] } == [800, 600])
        await #expect(throws: MediaError.self) { try await service.storeFromPeer(large, for: tooLarge) }
        #expect(!service.hasThumbnail(tooLarge))
        #expect(await service.keptSignedCount == 0)
    }

    @Test("a JPEG's frame size is read from its header as libvips reads it")
    func frameSizeFromTheHeader() throws {
        let jpeg = try Data(contentsOf: media.appendingPathComponent("thumb-ok.jpg"))
        let described = try Thumbnailer.describe(jpeg: jpeg)
        let frame = try #require(Thumbnailer.frameSize(ofJPEG: [UInt8](jpeg)))
        #expect(frame.width == described.width && frame.height == described.height)
        #expect(Thumbnailer.frameSize(ofJPEG: [0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02]) == nil)
        #expect(Thumbnailer.frameSize(ofJPEG: Array("not a JPEG".utf8)) == nil)
    }

    @Test func damagedOriginal() async throws {
        let directory = Directory()
        let assets = AssetStore(root: directory.url.appendingPathComponent("photos"))
        let service = ThumbnailService(assets: assets, logger: Logger(label: "test"))
        let hash = try assets.store(Data(contentsOf: fixtures.appendingPathComponent("truncated.jpg")))
        await #expect(throws: MediaError.self) { try await service.thumbnail(for: hash) }
    }

    /// Prints the figures for the report: bytes and milliseconds per thumbnail.
    @Test func figures() async throws {
        var lines: [String] = []
        var names = ["waterfall.jpg", "lake.png", "media/rotated-gps.jpg", "media/noise.jpg"]
        if let big = ProcessInfo.processInfo.environment["CONTINUUM_BIG_JPEG"] { names.append(big) }
        for name in names {
            let url = name.hasPrefix("/") ? URL(fileURLWithPath: name) : fixtures.appendingPathComponent(name)
            let clock = ContinuousClock()
            var data = Data()
            let runs = 10
            let elapsed = try clock.measure { for _ in 0..<runs { data = try Thumbnailer.make(from: url) } }
            let ms = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
            lines.append(
                "\(url.lastPathComponent): \(data.count) bytes, \(String(format: "%.1f", ms / Double(runs))) ms"
            )
        }
        print("thumbnail figures:\n" + lines.joined(separator: "\n"))
    }
}
