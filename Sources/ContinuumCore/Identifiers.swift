import Crypto
import Foundation

/// A 32-byte identifier: a public key or a SHA-256 digest.
///
/// Each kind of id is its own type (``AuthorID``, ``RecordID``, ``PostID``, ``CommentID``, ``AssetHash``), so that a
/// post id can never be passed where an author id is expected. All of them print and parse as 64 lowercase hex digits.
public protocol Identifier32: Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    /// The 32 raw bytes.
    var bytes: Data { get }
    /// Wraps bytes that the caller has checked are exactly 32 long.
    init(unchecked bytes: Data)
}

extension Identifier32 {
    /// Wraps 32 raw bytes, or returns nil for any other length.
    public init?(bytes: some DataProtocol) {
        guard bytes.count == 32 else { return nil }
        self.init(unchecked: Data(bytes))
    }

    /// Parses 64 hex digits (either case), or returns nil.
    public init?(hex: some StringProtocol) {
        guard hex.utf8.count == 64, let data = Hex.decode(hex) else { return nil }
        self.init(unchecked: data)
    }

    /// The 64 lowercase hex digits.
    public var hex: String { Hex.encode(bytes) }

    /// The first 12 hex digits, for display.
    public var short: String { String(hex.prefix(12)) }

    public var description: String { hex }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Self(hex: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected 64 hex digits")
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}

/// An author: the raw 32-byte Ed25519 public key of a node's identity.
public struct AuthorID: Identifier32 {
    public let bytes: Data
    public init(unchecked bytes: Data) { self.bytes = bytes }
}

/// The id of any record: the SHA-256 of its header (signed bytes and signature, not the erasable content).
public struct RecordID: Identifier32 {
    public let bytes: Data
    public init(unchecked bytes: Data) { self.bytes = bytes }
}

/// The id of a Post record.
public struct PostID: Identifier32 {
    public let bytes: Data
    public init(unchecked bytes: Data) { self.bytes = bytes }
    /// The post id of a record id; the caller knows that the record is a post.
    public init(_ record: RecordID) { self.bytes = record.bytes }
    /// This post id as a plain record id.
    public var record: RecordID { RecordID(unchecked: bytes) }
}

/// The id of a Comment record.
public struct CommentID: Identifier32 {
    public let bytes: Data
    public init(unchecked bytes: Data) { self.bytes = bytes }
    /// The comment id of a record id; the caller knows that the record is a comment.
    public init(_ record: RecordID) { self.bytes = record.bytes }
    /// This comment id as a plain record id.
    public var record: RecordID { RecordID(unchecked: bytes) }
}

/// A node: the raw 32-byte Ed25519 public key of its identity file, which its TLS certificate carries. Since groups
/// (PROTOCOL.md §2.7), a node signs no records with it: each of its memberships has a log key of its own (an
/// ``AuthorID``), and membership records tie the two together.
public struct NodeID: Identifier32 {
    public let bytes: Data
    public init(unchecked bytes: Data) { self.bytes = bytes }
}

/// A group: the log key of its founder, whose first record (a `group` record) founds it; or, for a network group
/// (`--network`), the network id, which no key holds.
public struct GroupID: Identifier32 {
    public let bytes: Data
    public init(unchecked bytes: Data) { self.bytes = bytes }
    /// The group founded by this log key.
    public init(founder: AuthorID) { self.bytes = founder.bytes }
    /// The log key of its founder (meaningless for a network group).
    public var founder: AuthorID { AuthorID(unchecked: bytes) }
}

/// The SHA-256 of a photo's bytes: the photo's address in every store.
public struct AssetHash: Identifier32 {
    public let bytes: Data
    public init(unchecked bytes: Data) { self.bytes = bytes }
}

/// Lowercase hexadecimal.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Lowercase hex of the bytes.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of an even number of hex digits (either case), or nil.
    public static func decode(_ text: some StringProtocol) -> Data? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = Data(capacity: utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    /// The value of one hex digit, or nil.
    public static func nibble(_ char: UInt8) -> UInt8? {
        switch char {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): char - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): char - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): char - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// A hex prefix of an id, as a person types it (`3fa9`), turned into the byte range of ids it matches.
public struct IDPrefix: Sendable, Hashable, CustomStringConvertible {
    /// The digits as typed, lowercased.
    public let digits: String
    /// The smallest id that starts with the prefix.
    public let lowerBound: Data
    /// The largest id that starts with the prefix.
    public let upperBound: Data

    /// Parses 1 to 64 hex digits, or returns nil.
    public init?(_ text: String) {
        let lowered = text.lowercased()
        guard (1...64).contains(lowered.utf8.count), lowered.utf8.allSatisfy({ Hex.nibble($0) != nil }) else {
            return nil
        }
        digits = lowered
        let padding = 64 - lowered.utf8.count
        lowerBound = Hex.decode(lowered + String(repeating: "0", count: padding))!
        upperBound = Hex.decode(lowered + String(repeating: "f", count: padding))!
    }

    /// Whether the id starts with these digits.
    public func matches(_ id: some Identifier32) -> Bool {
        id.hex.hasPrefix(digits)
    }

    /// What a person is told when the text is not a prefix: `'xyz' is not an id: ids are 1 to 64 hex digits (0-9,
    /// a-f)`.
    public static func notAnID(_ text: String) -> String {
        "'\(text)' is not an id: ids are 1 to 64 hex digits (0-9, a-f)"
    }

    public var description: String { digits }
}

extension AssetHash {
    /// The SHA-256 of the bytes.
    public static func of(_ data: some DataProtocol) -> AssetHash {
        AssetHash(unchecked: Data(SHA256.hash(data: data)))
    }
}
