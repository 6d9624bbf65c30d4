import ContinuumCore
import Foundation
import Testing

@Suite("Image recognition by content")
struct ImageProbeTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    static func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: fixtures.appendingPathComponent(name))
    }

    @Test(
        "the sample images are recognised with their pixel sizes",
        arguments: [
            ("waterfall.jpg", MediaType.jpeg, 1024, 768), ("lake.png", .png, 800, 600),
            ("forest.webp", .webp, 640, 480),
            ("anim.gif", .gif, 320, 240),
        ] as [(String, MediaType, UInt32, UInt32)]
    )
    func samples(name: String, type: MediaType, width: UInt32, height: UInt32) throws {
        #expect(try ImageProbe.inspect(Self.fixture(name)) == ImageInfo(mediaType: type, width: width, height: height))
    }

    @Test("text with a .jpg name is not an image")
    func notAnImage() throws {
        #expect(throws: ImageProbeError.unrecognised) { try ImageProbe.inspect(Self.fixture("not-an-image.jpg")) }
        #expect(throws: ImageProbeError.unrecognised) { try ImageProbe.inspect(Data()) }
    }

    @Test("truncated files are corrupt, in every format")
    func truncated() throws {
        #expect(throws: ImageProbeError.self) { try ImageProbe.inspect(Self.fixture("truncated.jpg")) }
        for name in ["waterfall.jpg", "lake.png", "forest.webp", "anim.gif"] {
            let data = try Self.fixture(name)
            let cut = data.prefix(data.count * 2 / 3)
            #expect(throws: ImageProbeError.self, "\(name) cut short") { try ImageProbe.inspect(cut) }
        }
    }

    /// A minimal HEIF header: ftyp, then meta / iprp / ipco with a thumbnail and a primary `ispe`.
    static func heif(brand: String, sizes: [(UInt32, UInt32)]) -> Data {
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
            let size = UInt32(8 + payload.count)
            return withUnsafeBytes(of: size.bigEndian, Array.init) + Array(type.utf8) + payload
        }
        func be32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
        let ispes = sizes.flatMap { box("ispe", [0, 0, 0, 0] + be32($0.0) + be32($0.1)) }
        let meta = box(
            "meta",
            [0, 0, 0, 0] + box("hdlr", [UInt8](repeating: 0, count: 24)) + box("iprp", box("ipco", ispes))
        )
        let ftyp = box("ftyp", Array(brand.utf8) + [0, 0, 0, 0] + Array(brand.utf8))
        return Data(ftyp + meta)
    }

    @Test("HEIC is recognised by its ftyp brand, and its size is the largest ispe")
    func heic() throws {
        let data = Self.heif(brand: "heic", sizes: [(320, 240), (4032, 3024)])
        #expect(try ImageProbe.inspect(data) == ImageInfo(mediaType: .heic, width: 4032, height: 3024))
        #expect(throws: ImageProbeError.unrecognised) { try ImageProbe.inspect(Self.heif(brand: "isom", sizes: [])) }
        #expect(throws: ImageProbeError.self) { try ImageProbe.inspect(Self.heif(brand: "heic", sizes: [])) }
    }
}
