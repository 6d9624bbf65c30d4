import ContinuumCore
import ContinuumWire
import Foundation
import Testing

@Suite("PHOTOS_WANT and PHOTOS (§7.4.26–27): the Python vectors, and every bad frame refused")
struct PhotosFrameTests {
    static func hash(_ byte: UInt8) -> AssetHash { AssetHash(unchecked: Data(repeating: byte, count: 32)) }

    /// The frames `scripts/photos_vectors.py` prints (and checks against frames written by hand from PROTOCOL.md).
    @Test("the encoder writes the independent encoder's frames, and the decoder reads them back")
    func vectors() throws {
        let abc = AssetHash.of(Data("abc".utf8))
        let cases: [(WireMessage, String)] = [
            (
                .photosWant([Self.hash(0x11), Self.hash(0x22)]),
                "00000043018902" + String(repeating: "11", count: 32) + String(repeating: "22", count: 32)
            ),
            (
                .photos([
                    SmallPhoto(hash: abc, bytes: Array("abc".utf8)), SmallPhoto(hash: Self.hash(0x22), bytes: nil),
                ]),
                "0000004e018a02ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad00000003616263"
                    + String(repeating: "22", count: 32) + "00000000"
            ),
            (
                .photos([SmallPhoto(hash: Self.hash(0x5a), bytes: Array(repeating: 0x5a, count: 65_536))]),
                "00010027018a01" + String(repeating: "5a", count: 32) + "00010000"
                    + String(repeating: "5a", count: 65_536)
            ),
        ]
        for (message, hex) in cases {
            let frame = WireCodec.encode(message)
            #expect(Hex.encode(frame) == hex)
            #expect(try WireCodec.decodePayload(type: frame[5], payload: frame[6...]) == message)
            #expect(feedBytewise(frame).messages == [message])
        }
    }

    @Test("a bad PHOTOS_WANT or PHOTOS is refused with what was wrong, not ignored as an unknown optional type")
    func refusals() {
        let one = [UInt8](repeating: 0x11, count: 32)
        let entry = one + be32(3) + [1, 2, 3]
        RefusalTests.expectRefused(frame(type: 0x89, payload: [0]), .malformedFrame, "0 photos; 1 ... 64 are allowed")
        RefusalTests.expectRefused(
            frame(type: 0x89, payload: [65] + (0..<65).flatMap { [UInt8](repeating: UInt8($0), count: 32) }),
            .malformedFrame,
            "65 photos"
        )
        RefusalTests.expectRefused(frame(type: 0x89, payload: [2] + one + one), .malformedFrame, "named twice")
        RefusalTests.expectRefused(frame(type: 0x89, payload: [2] + one + [1, 2]), .malformedFrame, "truncated")
        RefusalTests.expectRefused(
            frame(type: 0x8a, payload: [1] + one + be32(65_537)),
            .malformedFrame,
            "a photo of 65537 bytes; the limit is 65536"
        )
        RefusalTests.expectRefused(
            frame(type: 0x8a, payload: [1] + one + be32(4) + [1, 2, 3]),
            .malformedFrame,
            "truncated"
        )
        RefusalTests.expectRefused(frame(type: 0x8a, payload: [2] + entry + entry), .malformedFrame, "named twice")
        RefusalTests.expectRefused(frame(type: 0x8a, payload: [1] + entry + [0]), .malformedFrame, "trailing byte")
        // Another type of the optional range is still read whole and ignored.
        #expect(feed(frame(type: 0x8b, payload: [1, 2])).messages == [.optional(type: 0x8b, payload: [1, 2])])
    }
}
