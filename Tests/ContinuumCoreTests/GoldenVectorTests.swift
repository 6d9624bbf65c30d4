import ContinuumCore
import Foundation
import Testing

/// The test vectors of Docs/PROTOCOL.md, made by an independent Python encoder (scripts/protocol_vectors.py).
@Suite("Golden vectors of Docs/PROTOCOL.md")
struct GoldenVectorTests {
    struct Vectors: Decodable {
        struct Vector: Decodable {
            struct Body: Decodable {
                var name: String?
                var caption: String?
                var sha256: String?
                var bytes: UInt64?
                var mediaType: String?
                var width: UInt32?
                var height: UInt32?
                var latitudeE7: Int32?
                var longitudeE7: Int32?
                var post: String?
                var text: String?
                var targets: [String]?
            }
            var name: String
            var seed: String
            var author: String
            var sequence: UInt64
            var previous: String?
            var createdAt: Int64
            var kind: String
            var body: Body
            var signed: String
            var signature: String
            var record: String
            var id: String
        }
        var vectors: [Vector]
    }

    static func load() throws -> [Vectors.Vector] {
        let url = try #require(Bundle.module.url(forResource: "Resources/vectors", withExtension: "json"))
        return try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url)).vectors
    }

    struct MissingField: Error {}

    func need<T>(_ value: T?) throws -> T {
        guard let value else { throw MissingField() }
        return value
    }

    func body(of vector: Vectors.Vector) throws -> RecordBody {
        let b = vector.body
        switch vector.kind {
        case "profile": return .profile(name: try need(b.name))
        case "post":
            let location: Coordinate? =
                if let lat = b.latitudeE7, let lon = b.longitudeE7 {
                    Coordinate(latitudeE7: lat, longitudeE7: lon)
                } else { nil }
            return .post(
                caption: try need(b.caption),
                photo: PhotoReference(
                    sha256: try need(AssetHash(hex: try need(b.sha256))),
                    byteCount: try need(b.bytes),
                    mediaType: try need(MediaType(mimeType: try need(b.mediaType))),
                    width: try need(b.width),
                    height: try need(b.height)
                ),
                location: location
            )
        case "comment":
            return .comment(post: try need(PostID(hex: try need(b.post))), text: try need(b.text))
        case "edit":
            return .edit(post: try need(PostID(hex: try need(b.post))), caption: try need(b.caption))
        case "delete":
            return .delete(targets: try need(b.targets).map { try need(RecordID(hex: $0)) })
        default:
            throw MissingField()
        }
    }

    @Test("encoding, signature and id match the vectors byte for byte")
    func vectors() throws {
        let vectors = try Self.load()
        #expect(vectors.count >= 6)
        for vector in vectors {
            let identity = try NodeIdentity(seed: try #require(Hex.decode(vector.seed)))
            #expect(identity.author.hex == vector.author, "\(vector.name): author")
            let content = RecordContent(
                author: identity.author,
                sequence: vector.sequence,
                previous: vector.previous.flatMap(RecordID.init(hex:)),
                createdAt: Timestamp(milliseconds: vector.createdAt),
                body: try body(of: vector)
            )
            #expect(
                Hex.encode(try RecordFormat.encodeHeader(content, contentBytes: [])) == vector.signed,
                "\(vector.name): signed bytes"
            )
            let signed = try identity.sign(content)
            #expect(Hex.encode(signed.record.signature) == vector.signature, "\(vector.name): signature")
            #expect(Hex.encode(signed.bytes) == vector.record, "\(vector.name): record")
            #expect(signed.id.hex == vector.id, "\(vector.name): id")
            // And the other way: the vector's bytes decode and verify to the same content.
            let decoded = try SignedRecord(bytes: [UInt8](try #require(Hex.decode(vector.record)))).verify()
            #expect(decoded.content == content, "\(vector.name): decoded content")
        }
    }
}
