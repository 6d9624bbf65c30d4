import Crypto
import Foundation

/// A record's bytes, parsed and checked field by field, with its id. Not yet verified.
///
/// The bytes are the header, then the content unless it was erased (PROTOCOL.md §2). The id is the SHA-256 of the
/// header alone, so that it stays the same when the content is erased.
public struct SignedRecord: Sendable, Hashable {
    public let header: RecordHeader
    /// The kind-specific fields, nil when the content is absent (erased, or never received).
    public let body: RecordBody?
    /// The header and, when present, the content: what is stored and sent verbatim.
    public let bytes: [UInt8]
    /// SHA-256 of the header (signature included).
    public let id: RecordID
    private let signedLength: Int
    private let headerLength: Int

    /// Parses record bytes; throws for anything malformed or out of range, and for a content that does not match
    /// its header.
    public init(bytes: [UInt8]) throws(RecordError) {
        let decoded = try RecordFormat.decode(bytes)
        self.init(decoded, bytes: bytes)
    }

    fileprivate init(_ decoded: RecordFormat.Decoded, bytes: [UInt8]) {
        self.header = decoded.header
        self.body = decoded.body
        self.bytes = bytes
        self.signedLength = decoded.signedLength
        self.headerLength = decoded.headerLength
        self.id = RecordID(unchecked: Data(SHA256.hash(data: bytes[..<decoded.headerLength])))
    }

    public var author: AuthorID { header.author }
    public var sequence: UInt64 { header.sequence }
    public var kind: RecordKind { header.kind }

    /// The whole record as its author wrote it; nil when the content is absent.
    public var content: RecordContent? {
        body.map {
            RecordContent(
                author: header.author,
                sequence: header.sequence,
                previous: header.previous,
                createdAt: header.createdAt,
                body: $0
            )
        }
    }

    /// True when the record has content (every kind but delete) and it is not here.
    public var isHeaderOnly: Bool { body == nil }

    /// The header: signed bytes and signature.
    public var headerBytes: [UInt8] { Array(bytes[..<headerLength]) }

    /// The content bytes (salt included); nil when absent, empty for a delete.
    public var contentBytes: [UInt8]? { body == nil ? nil : Array(bytes[headerLength...]) }

    /// The signature: the last 64 bytes of the header.
    public var signature: [UInt8] { Array(bytes[signedLength..<headerLength]) }

    /// The same record with its content erased: the header alone. A delete, which has no content, is unchanged.
    public func erased() -> SignedRecord {
        guard header.hasContent, body != nil else { return self }
        return SignedRecord(
            RecordFormat.Decoded(header: header, body: nil, signedLength: signedLength, headerLength: headerLength),
            bytes: headerBytes
        )
    }

    /// Checks the Ed25519 signature against the author's key. The content was checked against the header's hash
    /// when the bytes were parsed.
    public func verify() throws(RecordError) -> VerifiedRecord {
        // An author that is no Ed25519 key can have signed nothing: its error becomes the record's refusal.
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: header.author.bytes) else {
            throw .badSignature
        }
        let valid = bytes.withUnsafeBufferPointer { buffer in
            let raw = UnsafeRawBufferPointer(buffer)
            return key.isValidSignature(
                UnsafeRawBufferPointer(rebasing: raw[signedLength..<headerLength]),
                for: UnsafeRawBufferPointer(rebasing: raw[..<signedLength])
            )
        }
        guard valid else { throw .badSignature }
        return VerifiedRecord(self)
    }
}

/// A record whose signature has been checked, or that this node signed itself. Only these are stored.
public struct VerifiedRecord: Sendable, Hashable {
    public let record: SignedRecord

    fileprivate init(_ record: SignedRecord) { self.record = record }

    public var id: RecordID { record.id }
    public var header: RecordHeader { record.header }
    /// The whole record; nil when only the header is here.
    public var content: RecordContent? { record.content }
    /// The kind-specific fields; nil when only the header is here.
    public var body: RecordBody? { record.body }
    public var bytes: [UInt8] { record.bytes }

    /// The same verified record without its content (the signature covers the header alone).
    public func erased() -> VerifiedRecord { VerifiedRecord(record.erased()) }
}

/// A node's Ed25519 key pair. Its public key is the node's ``AuthorID``.
public struct NodeIdentity: Sendable {
    public let privateKey: Curve25519.Signing.PrivateKey
    public let author: AuthorID

    public init(privateKey: Curve25519.Signing.PrivateKey) {
        self.privateKey = privateKey
        self.author = AuthorID(unchecked: privateKey.publicKey.rawRepresentation)
    }

    /// A new random identity.
    public static func generate() -> NodeIdentity { NodeIdentity(privateKey: .init()) }

    /// The node this identity is: the key its TLS certificate carries.
    public var node: NodeID { NodeID(unchecked: author.bytes) }

    /// The log key (the signing identity of one membership, PROTOCOL.md §2.7) derived from this identity's seed and
    /// `salt`: HKDF-SHA256 with the seed as input key material, `salt` as salt and `continuum log key v2` as info. Only
    /// the salt is stored; the private key is derived again when it signs.
    public func logKey(salt: some DataProtocol) -> NodeIdentity {
        let seed = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: privateKey.rawRepresentation),
            salt: salt,
            info: Array("continuum log key v2".utf8),
            outputByteCount: 32
        )
        return seed.withUnsafeBytes { bytes in
            // 32 bytes are always a valid Ed25519 seed.
            try! NodeIdentity(seed: Data(bytes))
        }
    }

    /// The identity of a 32-byte seed.
    public init(seed: some ContiguousBytes) throws {
        self.init(privateKey: try .init(rawRepresentation: seed))
    }

    /// Encodes, signs and returns the record, its content salted with 16 random bytes (or `salt`, for test
    /// vectors). `content.author` must be this identity.
    public func sign(_ content: RecordContent, salt: [UInt8]? = nil) throws(RecordError) -> VerifiedRecord {
        precondition(content.author == author, "a node signs only its own records")
        var generator = SystemRandomNumberGenerator()
        let salt = salt ?? (0..<RecordFormat.saltBytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let contentBytes = try RecordFormat.encodeContent(content, salt: salt)
        let signed = try RecordFormat.encodeHeader(content, contentBytes: contentBytes)
        guard let signature = try? privateKey.signature(for: signed) else { throw .badSignature }
        let bytes = signed + Array(signature) + contentBytes
        do {
            return VerifiedRecord(try SignedRecord(bytes: bytes))
        } catch {
            // The bytes were just encoded from a validated content: they parse.
            preconditionFailure("a record this node encoded does not parse: \(error)")
        }
    }
}
