import ContinuumCore
import Foundation
import Testing

/// The test vectors of Docs/PROTOCOL.md §8, made by an independent Python encoder (scripts/protocol_vectors.py):
/// records of format version 2, each whole (header, then content) and as its header alone: the five kinds of posts and
/// comments, then group and member records (§2.7), then records of kinds to come (§2.8), then reactions (§2.9), then
/// account records (§2.10); records that a node must refuse; and inert records of kind 13 and of kinds 8 … 11, valid
/// but breaking a rule of §2.9 or §2.10.
@Suite("Golden vectors of Docs/PROTOCOL.md")
struct GoldenVectorTests {
    struct Vectors: Decodable {
        struct Photo: Decodable {
            var sha256: String
            var bytes: UInt64
            var mediaType: String
            var width: UInt32
            var height: UInt32
            var takenAt: Int64?
            /// The author's thumbnail the photo commits to (photo flags bit 1, PROTOCOL.md §2.5), or null.
            var thumbnail: Thumbnail?
        }
        struct Thumbnail: Decodable {
            var sha256: String
            var bytes: UInt32
        }
        struct Body: Decodable {
            var name: String?
            var caption: String?
            var photo: Photo?
            var latitudeE7: Int32?
            var longitudeE7: Int32?
            var post: String?
            var text: String?
            var flags: UInt8?
            var location: String?
            var targets: [String]?
            var node: String?
            var open: Bool?
            var group: String?
            var action: String?
            var log: String?
            var through: UInt64?
            var code: UInt8?
            var context: String?
            var data: String?
            var payload: String?
            var comment: String?
            var emoji: UInt8?
            var account: String?
            var recovery: String?
            var device: String?
            var consent: String?
            var frontier: [FrontierEntry]?
            /// A log declaration's (kind 11) signature by the log key, not the record's own.
            var signature: String?
        }
        /// One log of a removal's frontier (§2.10): `head` is null for 32 zero bytes.
        struct FrontierEntry: Decodable {
            var log: String
            var through: UInt64
            var head: String?
        }
        struct Vector: Decodable {
            var name: String
            var seed: String
            var author: String
            var sequence: UInt64
            var previous: String?
            var createdAt: Int64
            var kind: String
            var salt: String?
            var body: Body
            var signed: String
            var signature: String
            var header: String
            var content: String
            var contentHash: String
            var record: String
            var id: String
        }
        struct Invalid: Decodable {
            var name: String
            var record: String
        }
        /// A record of kind 13, or of kinds 8 … 11, that keeps §2.8's common layout but breaks a rule of §2.9 or §2.10:
        /// valid, and no reaction or account record.
        struct Inert: Decodable {
            var name: String
            var code: UInt8
            var reason: String
            var record: String
            var header: String
            var id: String
        }
        var vectors: [Vector]
        var invalid: [Invalid]
        var inert: [Inert]
    }

    /// The number of vectors in vectors.json, for the tests that take a vector's index as an argument.
    static let count = 26

    /// The kind codes of the account records (PROTOCOL.md §2.10), by their names in vectors.json.
    static let accountCodes: [String: UInt8] = ["account": 8, "device-add": 9, "device-remove": 10, "log": 11]

    static func load() throws -> Vectors {
        let url = try #require(Bundle.module.url(forResource: "Resources/vectors", withExtension: "json"))
        return try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }

    /// RFC 8032 signing is deterministic in BoringSSL (swift-crypto on Linux); CryptoKit randomizes its signatures,
    /// so on Apple platforms only the signed bytes can match the vectors (PROTOCOL.md §8).
    #if canImport(Darwin)
    static let deterministicSigner = false
    #else
    static let deterministicSigner = true
    #endif

    struct MissingField: Error, CustomStringConvertible {
        var description: String
    }

    func need<T>(_ value: T?, _ what: String) throws -> T {
        guard let value else { throw MissingField(description: "vectors.json: no valid \(what)") }
        return value
    }

    func bytes(_ hex: String) throws -> [UInt8] { [UInt8](try need(Hex.decode(hex), "hex")) }

    func photo(_ photo: Vectors.Photo) throws -> PhotoReference {
        PhotoReference(
            sha256: try need(AssetHash(hex: photo.sha256), "photo sha256"),
            byteCount: photo.bytes,
            mediaType: try need(MediaType(mimeType: photo.mediaType), "media type"),
            width: photo.width,
            height: photo.height,
            takenAt: photo.takenAt.map { Timestamp(milliseconds: $0) },
            thumbnail: try photo.thumbnail.map {
                ThumbnailReference(sha256: try need(AssetHash(hex: $0.sha256), "thumbnail sha256"), byteCount: $0.bytes)
            }
        )
    }

    func coordinate(_ body: Vectors.Body) -> Coordinate? {
        guard let lat = body.latitudeE7, let lon = body.longitudeE7 else { return nil }
        return Coordinate(latitudeE7: lat, longitudeE7: lon)
    }

    func body(of vector: Vectors.Vector) throws -> RecordBody {
        let b = vector.body
        switch vector.kind {
        case "profile":
            return .profile(name: try need(b.name, "name"))
        case "post":
            return .post(
                caption: try need(b.caption, "caption"),
                photo: try photo(try need(b.photo, "photo")),
                location: coordinate(b)
            )
        case "comment":
            return .comment(
                post: try need(PostID(hex: try need(b.post, "post")), "post"),
                text: try need(b.text, "text")
            )
        case "edit":
            let location: PostChange.Location
            switch b.location {
            case "unchanged": location = .unchanged
            case "removed": location = .removed
            case "set": location = .set(try need(coordinate(b), "coordinates"))
            default: throw MissingField(description: "vectors.json: edit location \(b.location ?? "null")")
            }
            return .edit(
                post: try need(PostID(hex: try need(b.post, "post")), "post"),
                change: PostChange(caption: b.caption, photo: try b.photo.map(photo), location: location)
            )
        case "delete":
            return .delete(targets: try need(b.targets, "targets").map { try need(RecordID(hex: $0), "target") })
        case "group":
            return .group(
                GroupFounding(
                    node: try need(NodeID(hex: try need(b.node, "node")), "node"),
                    name: try need(b.name, "name"),
                    open: try need(b.open, "open")
                )
            )
        case "member":
            let action = try need(b.action, "action")
            return .member(
                MemberChange(
                    group: try need(GroupID(hex: try need(b.group, "group")), "group"),
                    action: try need(MemberAction.allCases.first { $0.name == action }, "action"),
                    node: try need(NodeID(hex: try need(b.node, "node")), "node"),
                    log: try need(AuthorID(hex: try need(b.log, "log")), "log"),
                    through: try need(b.through, "through")
                )
            )
        case "future":
            return .opaque(
                OpaqueReferences(
                    code: try need(b.code, "code"),
                    context: try b.context.map { try need(PostID(hex: $0), "context") },
                    data: try bytes(try need(b.data, "data"))
                ),
                payload: try bytes(try need(b.payload, "payload"))
            )
        case "reaction":
            // A reaction is a record of code 13 in the common layout of §2.8: the post as its context, the comment (if
            // any) as its data, and the emoji's code after the salt.
            return .opaque(
                OpaqueReferences(
                    code: 13,
                    context: try need(PostID(hex: try need(b.post, "post")), "post"),
                    data: try b.comment.map(bytes) ?? []
                ),
                payload: [try need(b.emoji, "emoji")]
            )
        case "account", "device-add", "device-remove", "log":
            // An account record is a record of its code in the common layout of §2.8: no context, the fields in its
            // data, no content.
            let code = try need(Self.accountCodes[vector.kind], "code")
            return .opaque(OpaqueReferences(code: code, context: nil, data: try accountData(of: vector)), payload: [])
        default:
            throw MissingField(description: "vectors.json: kind \(vector.kind)")
        }
    }

    /// The `data` of an account vector, written byte by byte from its JSON and PROTOCOL.md §2.10's table.
    func accountData(of vector: Vectors.Vector) throws -> [UInt8] {
        let b = vector.body
        let account = try b.account.map(bytes) ?? [UInt8](repeating: 0, count: 32)
        switch vector.kind {
        case "account":
            guard let recovery = b.recovery else { return account + [0] }
            return account + [1] + (try bytes(recovery))
        case "device-add":
            return account + (try bytes(try need(b.device, "device"))) + (try bytes(try need(b.consent, "consent")))
        case "log":
            return account + (try bytes(try need(b.group, "group"))) + (try bytes(try need(b.log, "log")))
                + (try bytes(try need(b.signature, "signature")))
        default:
            let frontier = try need(b.frontier, "frontier")
            var data = account + (try bytes(try need(b.device, "device"))) + [UInt8(frontier.count)]
            for entry in frontier {
                data += try bytes(entry.log)
                data += (0..<8).reversed().map { UInt8(truncatingIfNeeded: entry.through >> (8 * $0)) }
                data += try entry.head.map(bytes) ?? [UInt8](repeating: 0, count: 32)
            }
            return data
        }
    }

    /// The account record an account vector's JSON gives (§2.10), built from the JSON alone.
    func accountRecord(of vector: Vectors.Vector) throws -> AccountRecord {
        let b = vector.body
        switch vector.kind {
        case "account":
            if let account = b.account { return .joining(try need(AccountID(hex: account), "account")) }
            return .founding(recovery: try b.recovery.map { try need(AuthorID(hex: $0), "recovery") })
        case "device-add":
            return .deviceAdd(
                account: try need(AccountID(hex: try need(b.account, "account")), "account"),
                device: try need(AuthorID(hex: try need(b.device, "device")), "device"),
                consent: Data(try bytes(try need(b.consent, "consent")))
            )
        case "log":
            return .logDeclaration(
                account: try need(AccountID(hex: try need(b.account, "account")), "account"),
                group: try need(GroupID(hex: try need(b.group, "group")), "group"),
                log: try need(AuthorID(hex: try need(b.log, "log")), "log"),
                signature: Data(try bytes(try need(b.signature, "signature")))
            )
        default:
            return .deviceRemove(
                account: try need(AccountID(hex: try need(b.account, "account")), "account"),
                device: try need(AuthorID(hex: try need(b.device, "device")), "device"),
                frontier: try need(b.frontier, "frontier").map {
                    FrontierEntry(
                        log: try need(AuthorID(hex: $0.log), "log"),
                        through: $0.through,
                        head: try $0.head.map { try need(RecordID(hex: $0), "head") }
                    )
                }
            )
        }
    }

    func content(of vector: Vectors.Vector) throws -> RecordContent {
        let identity = try NodeIdentity(seed: try bytes(vector.seed))
        #expect(identity.author.hex == vector.author, "\(vector.name): author")
        return RecordContent(
            author: identity.author,
            sequence: vector.sequence,
            previous: try vector.previous.map { try need(RecordID(hex: $0), "previous") },
            createdAt: Timestamp(milliseconds: vector.createdAt),
            body: try body(of: vector)
        )
    }

    @Test("the content, the header and, with a deterministic signer, the record and id match byte for byte")
    func encoding() throws {
        let vectors = try Self.load().vectors
        #expect(vectors.count == Self.count)
        for vector in vectors {
            let content = try content(of: vector)
            let salt = try vector.salt.map(bytes) ?? [UInt8](repeating: 0, count: RecordFormat.saltBytes)
            let contentBytes = try RecordFormat.encodeContent(content, salt: salt)
            #expect(Hex.encode(contentBytes) == vector.content, "\(vector.name): content")
            #expect(AssetHash.of(Data(contentBytes)).hex == vector.contentHash, "\(vector.name): content hash")
            let signed = try RecordFormat.encodeHeader(content, contentBytes: contentBytes)
            #expect(Hex.encode(signed) == vector.signed, "\(vector.name): header's signed bytes")

            let identity = try NodeIdentity(seed: try bytes(vector.seed))
            let record = try identity.sign(content, salt: salt)
            #expect(record.content == content, "\(vector.name): signed content")
            #expect(record.record.contentBytes.map { Hex.encode($0) } == vector.content, "\(vector.name): content")
            if Self.deterministicSigner {
                #expect(Hex.encode(record.record.signature) == vector.signature, "\(vector.name): signature")
                #expect(Hex.encode(record.record.headerBytes) == vector.header, "\(vector.name): header")
                #expect(Hex.encode(record.bytes) == vector.record, "\(vector.name): record")
                #expect(record.id.hex == vector.id, "\(vector.name): id")
            } else {
                #expect(Hex.encode(record.record.headerBytes.prefix(signed.count)) == vector.signed)
            }
        }
    }

    @Test("each vector decodes and verifies whole and as its header alone, with the same id")
    func decoding() throws {
        for vector in try Self.load().vectors {
            let expected = try content(of: vector)
            let header = try bytes(vector.header)
            let whole = try SignedRecord(bytes: try bytes(vector.record)).verify()
            #expect(whole.content == expected, "\(vector.name): decoded content")
            #expect(whole.id.hex == vector.id, "\(vector.name): id of the record whole")
            #expect(whole.record.headerBytes == header, "\(vector.name): header of the record whole")
            #expect(whole.record.contentBytes.map { Hex.encode($0) } == vector.content, "\(vector.name): content")
            #expect(Hex.encode(whole.record.signature) == vector.signature, "\(vector.name): signature")
            #expect(Hex.encode(whole.header.contentHash) == vector.contentHash, "\(vector.name): content hash")
            #expect(Int(whole.header.contentLength) == vector.content.count / 2, "\(vector.name): content length")

            let alone = try SignedRecord(bytes: header).verify()
            #expect(alone.id == whole.id, "\(vector.name): id of the header alone")
            #expect(alone.header == whole.header, "\(vector.name): header alone")
            #expect(alone.bytes == header, "\(vector.name): bytes of the header alone")
            let noContent =
                vector.kind == "delete" || vector.kind == "member" || Self.accountCodes[vector.kind] != nil
                || (vector.kind == "future" && vector.body.payload == "")
            if noContent {
                // A delete, a member record, an account record or a kind to come with no payload has no content: its
                // header alone is the record whole.
                #expect(alone.content == expected, "\(vector.name): a \(vector.kind) decodes whole from its header")
                #expect(vector.record == vector.header, "\(vector.name): a \(vector.kind) is its header")
                #expect(alone.record.contentBytes == [], "\(vector.name): no content bytes")
            } else {
                #expect(alone.body == nil && alone.content == nil, "\(vector.name): header alone has no content")
                #expect(alone.record.isHeaderOnly, "\(vector.name): header alone")
                #expect(alone.record.contentBytes == nil, "\(vector.name): header alone has no content bytes")
            }

            // Erasing the whole record gives exactly the header alone, which still verifies.
            let erased = whole.erased()
            #expect(erased.bytes == header, "\(vector.name): erased")
            #expect(erased.id == whole.id, "\(vector.name): erased id")
            #expect(try erased.record.verify() == erased, "\(vector.name): erased verifies")
        }
    }

    @Test("the vectors of kinds to come (§2.8) decode as a kind this node does not know, code and references kept")
    func kindsToCome() throws {
        let vectors = try Self.load().vectors
        let post = try #require(vectors.first { $0.name == "A2 post with location and taken-at" })
        let postID = try #require(PostID(hex: post.id))
        let u1 = try #require(vectors.first { $0.name == "U1 kind 200 going with a post" })
        let one = try SignedRecord(bytes: try bytes(u1.record)).verify()
        #expect(one.header.kind == .unknown && one.header.kindCode == 200)
        #expect(one.header.references.posts == [postID])
        #expect(one.header.contentLength == 16 + 16)
        #expect(
            one.body
                == .opaque(
                    OpaqueReferences(code: 200, context: postID, data: [1, 2, 3]),
                    payload: Array("Seen at dawn \u{2600}".utf8)
                )
        )
        // 86 (sequence 2) + 32 (context) + 2 + 3 (data) + 4 + 32 + 64, then the salt and the payload.
        #expect(try bytes(u1.header).count == 223 && one.bytes.count == 223 + 32)

        let u2 = try #require(vectors.first { $0.name == "U2 kind 8 with nothing" })
        let two = try SignedRecord(bytes: try bytes(u2.record)).verify()
        #expect(two.header.kind == .unknown && two.header.kindCode == 8)
        #expect(two.header.references.posts.isEmpty && two.header.contentLength == 0)
        #expect(two.header.contentHash == RecordFormat.emptyContentHash)
        #expect(two.body == .opaque(OpaqueReferences(code: 8, context: nil), payload: []))
        #expect(two.bytes.count == 220 && two.header.sequence == 3 && two.header.previous == one.id)
    }

    @Test("the reactions (§2.9) read back as the reaction their JSON gives, whole; a header alone reads as none")
    func reactions() throws {
        let vectors = try Self.load().vectors
        let reactions = vectors.filter { $0.kind == "reaction" }
        #expect(reactions.count == 3)
        for vector in reactions {
            let whole = try SignedRecord(bytes: try bytes(vector.record)).verify()
            #expect(whole.header.kind == .unknown && whole.header.kindCode == 13, "\(vector.name): kind")
            let body = try #require(whole.body, "\(vector.name): a body")
            let reaction = try #require(Reaction(body), "\(vector.name): a reaction")
            #expect(reaction.post.hex == vector.body.post, "\(vector.name): post")
            #expect(reaction.comment?.hex == vector.body.comment, "\(vector.name): comment")
            #expect(reaction.emoji.rawValue == vector.body.emoji, "\(vector.name): emoji")
            #expect(whole.header.contentLength == 17, "\(vector.name): content length")

            let alone = try SignedRecord(bytes: try bytes(vector.header)).verify()
            #expect(alone.body == nil && alone.id == whole.id, "\(vector.name): header alone")
        }

        // By hand, from PROTOCOL.md §8: B's reactions to A's post A2 and to B's own comment B1 on it.
        let a2 = try #require(vectors.first { $0.name == "A2 post with location and taken-at" })
        let b1 = try #require(vectors.first { $0.name == "B1 comment" })
        let post = try #require(PostID(hex: a2.id))
        let comment = try #require(CommentID(hex: b1.id))
        let expected = [
            "R1 reaction red heart to a post": Reaction(post: post, emoji: .heart),
            "R2 reaction tears of joy to a comment": Reaction(post: post, comment: comment, emoji: .laugh),
            "R3 reaction taken back": Reaction(post: post, emoji: .none),
        ]
        for (name, reaction) in expected {
            let vector = try #require(reactions.first { $0.name == name }, "no vector named \(name)")
            let read = try SignedRecord(bytes: try bytes(vector.record)).verify()
            #expect(read.body.flatMap(Reaction.init) == reaction, "\(name)")
            #expect(read.header.author.hex == b1.author && read.header.references.posts == [post], "\(name)")
        }
    }

    @Test(
        "every single-bit flip of a vector, whole or header alone, is refused",
        arguments: 0..<GoldenVectorTests.count
    )
    func bitFlips(index: Int) throws {
        let vector = try Self.load().vectors[index]
        var forms = [("whole", try bytes(vector.record))]
        if vector.header != vector.record { forms.append(("header alone", try bytes(vector.header))) }
        for (form, record) in forms {
            #expect(try SignedRecord(bytes: record).verify().id.hex == vector.id)
            var accepted: [Int] = []
            for bit in 0..<(record.count * 8) {
                var flipped = record
                flipped[bit / 8] ^= 1 << UInt8(bit % 8)
                if (try? SignedRecord(bytes: flipped).verify()) != nil { accepted.append(bit) }
            }
            #expect(accepted.isEmpty, "\(vector.name), \(form): bits accepted after flipping: \(accepted)")
        }
    }

    @Test("every invalid record of vectors.json is refused")
    func invalid() throws {
        let cases = try Self.load().invalid
        #expect(cases.count > 80)
        for invalid in cases {
            let record = try bytes(invalid.record)
            #expect((try? SignedRecord(bytes: record).verify()) == nil, "accepted: \(invalid.name)")
        }
        // Some of them, with the reason the reference gives.
        let reasons = [
            "a version 1 record": "malformed record: record format version 1 is not read any more",
            "version 3": "malformed record: unknown record format version 3",
            "content that does not match its header's hash":
                "the content does not match its header: its SHA-256 is not the one the header gives",
            "content one byte short":
                "the content does not match its header: the content is 21 bytes; the header says 22",
            "a delete with content after its header": "the content does not match its header: a delete has no content",
            "a delete whose content hash is not that of no bytes": "malformed record: a delete has no content",
            "profile content length 82, header alone": "out of range: content length 82 of a profile must be 18 ... 81",
            "edit content length 16, header alone": "out of range: content length 16 of a edit must be 17 ... 2169",
            "trailing byte after a name": "malformed record: 1 trailing bytes in the content",
            "invalid UTF-8 in name": "malformed record: name is not valid UTF-8",
            // The byte after a photo's height is its photo flags (PROTOCOL.md §2.5): bit 0 takenAt, bit 1 thumbnail.
            "photo flags 04": "malformed record: photo flags are 0x04; only bits 0 and 1 may be set",
            "thumbnail bytes 0": "out of range: thumbnail size 0 must be 1 ... 65536 bytes",
            "thumbnail bytes 65537": "out of range: thumbnail size 65537 must be 1 ... 65536 bytes",
            "takenAt -1": "out of range: takenAt -1 is outside 1970 ... 9999",
            "edit flags with no bit": "out of range: an edit must change the caption, photo or location",
            "edit flags with both location bits": "malformed record: an edit cannot both set and remove the location",
            "edit flags with bit 4": "malformed record: edit flags 24 set an unknown bit",
            "bad signature, header alone": "the signature does not match the record's author and bytes",
            "group at sequence 2": "out of range: a group record founds its author's log: its sequence must be 1",
            "group flags 02": "malformed record: group flags 2 set an unknown bit",
            "blank group name": "out of range: group name is blank",
            "group with no content (length 0), header alone":
                "out of range: content length 0 of a group must be 18 ... 81",
            "member action 4": "out of range: unknown member action 4",
            "member with content": "malformed record: a member has no content",
            "member with content length 0 and bytes after its header":
                "the content does not match its header: a member has no content",
            "member add with through 1": "out of range: through is for a removal; an add must have 0",
            "member remove with through 2^53": "out of range: through 9007199254740992 must be 0 ... 9007199254740991",
            "self-add at sequence 2":
                "out of range: a member record about its own author must add it, as the first record of its log",
            "self-remove":
                "out of range: a member record about its own author must add it, as the first record of its log",
            "member naming the group's founder (log == group)":
                "out of range: a member record cannot name the group's founder",
            "kind 0": "malformed record: record kind 0 is not defined; kinds are 1 ... 255",
            "kind 200, data length 4097": "references of kind 200 is 4097 bytes; the limit is 4096",
            "kind 200, content length 16, header alone":
                "out of range: content length 16 of a record of an unknown kind must be 17 ... 8192",
            "kind 200, content length 8193, header alone":
                "out of range: content length 8193 of a record of an unknown kind must be 17 ... 8192",
            "kind 200, content length 0 and a hash not that of no bytes":
                "malformed record: a record of an unknown kind has no content: its content length must be 0",
            // Kind 13 is refused only where it breaks §2.8's common layout, or §2.4, as any record.
            "reaction content that does not match its header's hash":
                "the content does not match its header: its SHA-256 is not the one the header gives",
            "reaction content length 16, header alone":
                "out of range: content length 16 of a record of an unknown kind must be 17 ... 8192",
        ]
        for (name, reason) in reasons {
            let invalid = try #require(cases.first { $0.name == name }, "no invalid record named \(name)")
            let record = try bytes(invalid.record)
            do {
                _ = try SignedRecord(bytes: record).verify()
                Issue.record("accepted: \(name)")
            } catch {
                #expect(error.description.hasPrefix(reason), "\(name): \(error.description)")
            }
        }
        // A record of kind 13 that breaks only §2.9's rules is never among them (PROTOCOL.md §2.9).
        let inert = Set(try Self.load().inert.map(\.name))
        #expect(cases.allSatisfy { !inert.contains($0.name) })
    }

    @Test("each inert record of kind 13 verifies whole and as its header alone, re-encodes, and is no reaction")
    func inertRecords() throws {
        let cases = try Self.load().inert.filter { $0.code == 13 }
        #expect(cases.count == 8)
        for inert in cases {
            let whole = try SignedRecord(bytes: try bytes(inert.record)).verify()
            #expect(whole.header.kind == .unknown && whole.header.kindCode == 13, "\(inert.name): kind")
            #expect(whole.id.hex == inert.id, "\(inert.name): id")
            let body = try #require(whole.body, "\(inert.name): a body")
            #expect(Reaction(body) == nil, "\(inert.name): read as a reaction (it is inert: \(inert.reason))")

            // The node's encoder no longer checks §2.9's rules: it gives the same bytes back.
            let content = try #require(whole.content, "\(inert.name): a content")
            let contentBytes = try #require(whole.record.contentBytes, "\(inert.name): content bytes")
            let salt = contentBytes.isEmpty ? [UInt8](repeating: 0, count: 16) : Array(contentBytes.prefix(16))
            #expect(try RecordFormat.encodeContent(content, salt: salt) == contentBytes, "\(inert.name): content")
            let signed = try RecordFormat.encodeHeader(content, contentBytes: contentBytes)
            #expect(signed == Array(whole.record.headerBytes.dropLast(64)), "\(inert.name): header's signed bytes")

            let header = try bytes(inert.header)
            let alone = try SignedRecord(bytes: header).verify()
            #expect(alone.id == whole.id && alone.header == whole.header, "\(inert.name): header alone")
            if inert.header == inert.record {
                #expect(alone.body == body && contentBytes.isEmpty, "\(inert.name): no content, so whole alone")
            } else {
                #expect(alone.body == nil && alone.record.isHeaderOnly, "\(inert.name): header alone has no content")
            }
        }

        // By hand, from PROTOCOL.md §8: identity A's records of kind 13 about the post 0101…01 (or none), the comment
        // 0202…02, with the salt f0…ff.
        let post = try #require(PostID(hex: String(repeating: "01", count: 32)))
        let comment = [UInt8](repeating: 2, count: 32)
        let expected: [String: RecordBody] = [
            "reaction code 7": .opaque(OpaqueReferences(code: 13, context: post), payload: [7]),
            "reaction code 255 to a comment":
                .opaque(OpaqueReferences(code: 13, context: post, data: comment), payload: [255]),
            "reaction with 3 bytes of data":
                .opaque(OpaqueReferences(code: 13, context: post, data: [1, 2, 3]), payload: [1]),
            "reaction whose context is 32 zero bytes": .opaque(OpaqueReferences(code: 13, context: nil), payload: [1]),
            "reaction whose data is its context":
                .opaque(OpaqueReferences(code: 13, context: post, data: Array(post.bytes)), payload: [1]),
            "reaction content of 18 bytes (code and one more byte)":
                .opaque(OpaqueReferences(code: 13, context: post), payload: [1, 0]),
            "reaction with no content (content length 0)": .opaque(
                OpaqueReferences(code: 13, context: post),
                payload: []
            ),
        ]
        for (name, body) in expected {
            let inert = try #require(cases.first { $0.name == name }, "no inert record named \(name)")
            let read = try SignedRecord(bytes: try bytes(inert.record)).verify()
            #expect(read.body == body, "\(name)")
            #expect(
                read.header.author.hex == "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8",
                "\(name)"
            )
        }
    }
}

extension GoldenVectorTests {
    /// The account vectors AC1 … AC5, verified, in the order of vectors.json.
    func accountVectors() throws -> [(vector: Vectors.Vector, record: VerifiedRecord)] {
        try Self.load().vectors.filter { Self.accountCodes[$0.kind] != nil }.map {
            ($0, try SignedRecord(bytes: try bytes($0.record)).verify())
        }
    }

    @Test("the account vectors (§2.10) verify and read as the account records their JSON gives")
    func accountRecords() throws {
        let accounts = try accountVectors()
        #expect(accounts.map { String($0.vector.name.prefix(3)) } == ["AC1", "AC2", "AC3", "AC4", "AC5"])
        for (vector, whole) in accounts {
            #expect(whole.header.kind == .unknown, "\(vector.name): kind")
            #expect(whole.header.kindCode == Self.accountCodes[vector.kind], "\(vector.name): kind code")
            #expect(whole.header.references.posts.isEmpty, "\(vector.name): no context")
            #expect(whole.header.contentLength == 0 && vector.record == vector.header, "\(vector.name): no content")
            let body = try #require(whole.body, "\(vector.name): a body")
            let read = AccountRecord(body, author: whole.header.author)
            #expect(read == (try accountRecord(of: vector)), "\(vector.name): read as \(String(describing: read))")

            let alone = try SignedRecord(bytes: try bytes(vector.header)).verify()
            #expect(alone.id == whole.id && alone.body == body, "\(vector.name): header alone")
        }

        // By hand, from PROTOCOL.md §8: L founds the account with recovery key K, D joins it, L adds D, D removes L
        // keeping L's account log through 2 (head AC3) and nothing of the log eeee…ee, D declares its log key N in the
        // group G1 (vector 9, founded by log key F) for the account.
        let (laptop, desktop) = (accounts[0].record.header.author, accounts[1].record.header.author)
        let account = AccountID(founding: accounts[0].record.id)
        let recovery = try #require(
            AuthorID(hex: "74e2a944eb640ccefef4d301cb282d8ee31bdfa99527ecb6b7c809b1d255037a")
        )
        // G1's id is F's public key (seed 4041…5f); N's seed is 9f9e…80.
        let group = try #require(GroupID(hex: "2543b92ff1095511476adc8369db6ddc933665a11978dda1404ee1066ca9559d"))
        let logN = try #require(AuthorID(hex: "87ded68945a0fdb974d33ada42d2408e1ae490de811757e729dac5ddc3fe73f1"))
        let frontier = [
            FrontierEntry(log: laptop, through: 2, head: accounts[2].record.id),
            FrontierEntry(log: try #require(AuthorID(hex: String(repeating: "ee", count: 32))), through: 0, head: nil),
        ]
        let expected: [AccountRecord] = [
            .founding(recovery: recovery),
            .joining(account),
            .deviceAdd(
                account: account,
                device: desktop,
                consent: Data(try bytes(accounts[2].vector.body.consent ?? ""))
            ),
            .deviceRemove(account: account, device: laptop, frontier: frontier),
            .logDeclaration(
                account: account,
                group: group,
                log: logN,
                signature: Data(try bytes(accounts[4].vector.body.signature ?? ""))
            ),
        ]
        for ((vector, whole), record) in zip(accounts, expected) {
            #expect(whole.body.flatMap { AccountRecord($0, author: whole.header.author) } == record, "\(vector.name)")
        }
        #expect(laptop.hex == "bafc71bead3ac5e4b63e9c8216ee71a34aaec65722eedbca728b4e9b3ccce396")
        #expect(desktop.hex == "414d91063323ba7b23cdf3b4409aeaceb4c928424d14e3b87211ccc807484545")
        // AC5 is D's record after its removal of L, and N signed the ASCII continuum-log-declaration-v3, the account,
        // G1 and D (124 bytes).
        #expect(accounts[4].record.header.author == desktop && accounts[4].record.header.sequence == 3)
        #expect(accounts[4].record.header.previous == accounts[3].record.id)
        #expect(
            Hex.encode(AccountRecord.declarationMessage(account: account, group: group, device: desktop))
                == "636f6e74696e75756d2d6c6f672d6465636c61726174696f6e2d7633"
                + "62720b0796d907da13e3e0b51c4805b9614b105e73486b68da6737967fb1afc4"
                + "2543b92ff1095511476adc8369db6ddc933665a11978dda1404ee1066ca9559d"
                + "414d91063323ba7b23cdf3b4409aeaceb4c928424d14e3b87211ccc807484545"
        )

        // Vector 16 (U2), of kind 8 with no data, is an inert account record.
        let u2 = try #require(try Self.load().vectors.first { $0.name == "U2 kind 8 with nothing" })
        let two = try SignedRecord(bytes: try bytes(u2.record)).verify()
        #expect(two.body.flatMap { AccountRecord($0, author: two.header.author) } == nil)
    }

    @Test("the account rule over AC1 … AC5 (§2.10): D's removal of L counts, so D is the one device and L is removed")
    func accountState() throws {
        let accounts = try accountVectors()
        let records = accounts.map(\.record)
        let (laptop, desktop) = (records[0].header.author, records[1].header.author)
        let account = AccountID(founding: records[0].id)
        // D's removal keeps L's account log through AC3, L's add of D: D's add path stands, and L is removed.
        let state = try #require(AccountRules.state(of: account, from: records))
        #expect(state.devices == [desktop])
        #expect(state.removed == [laptop])
        // The set counts, not the order.
        #expect(AccountRules.state(of: account, from: records.reversed()) == state)
        // Without the removal, L founded the account and added D: both are devices.
        let before = try #require(AccountRules.state(of: account, from: Array(records.prefix(3))))
        #expect(before.devices == [laptop, desktop] && before.removed.isEmpty)
        // D's log declaration (AC5) changes no device, and counts as a record of D's account log (§2.10).
        let undeclared = try #require(AccountRules.state(of: account, from: Array(records.prefix(4))))
        #expect(undeclared.devices == [desktop] && undeclared.removed == [laptop])
        let declaration = try #require(
            RecordID(hex: "57c5e96482d590f5bf7ab6a1ff5f77ade016b18c3ac4f5dece3caae01711fad6")
        )
        #expect(state.countingRecords.contains(declaration) && !undeclared.countingRecords.contains(declaration))
        // Without the founding record there is no account to speak of.
        #expect(AccountRules.state(of: account, from: Array(records.dropFirst())) == nil)
    }

    @Test("each inert account record (kinds 8 … 11) verifies whole and as its header alone, and is no account record")
    func inertAccountRecords() throws {
        let cases = try Self.load().inert.filter { $0.code != 13 }
        #expect(cases.count == 27)
        #expect(cases.filter { $0.code == 11 }.count == 8)
        for inert in cases {
            #expect([8, 9, 10, 11].contains(inert.code), "\(inert.name): code \(inert.code)")
            let whole = try SignedRecord(bytes: try bytes(inert.record)).verify()
            #expect(whole.header.kind == .unknown && whole.header.kindCode == inert.code, "\(inert.name): kind")
            #expect(whole.id.hex == inert.id, "\(inert.name): id")
            let body = try #require(whole.body, "\(inert.name): a body")
            let read = AccountRecord(body, author: whole.header.author)
            #expect(read == nil, "\(inert.name): read as \(String(describing: read)); it is inert: \(inert.reason)")

            let alone = try SignedRecord(bytes: try bytes(inert.header)).verify()
            #expect(alone.id == whole.id && alone.header == whole.header, "\(inert.name): header alone")
            // Only the one with a content has a header alone apart from the record whole.
            #expect(
                alone.body == (inert.header == inert.record ? body : nil),
                "\(inert.name): header alone's body"
            )
        }
        #expect(cases.filter { $0.header != $0.record }.map(\.name) == ["account record with a content"])
    }
}
