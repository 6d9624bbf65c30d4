import ContinuumCore
import Foundation

/// Appends big-endian fixed-width integers: the primitives of a frame (the pattern of ContinuumCore's `ByteWriter`).
struct WireWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ value: UInt8) { bytes.append(value) }

    mutating func u16(_ value: UInt16) { appendBigEndian(value) }

    mutating func u32(_ value: UInt32) { appendBigEndian(value) }

    mutating func u64(_ value: UInt64) { appendBigEndian(value) }

    mutating func raw(_ data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }

    /// Overwrites four bytes at `offset` with a big-endian `u32`.
    mutating func patch(_ value: UInt32, at offset: Int) {
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (24 - 8 * index)) }
    }

    private mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
}

/// Reads one message's payload, checking every length against the bytes that remain before it reads. Every
/// failure is a ``WireError/Code/malformedFrame`` whose message names the message type and the field.
struct WireReader {
    private let bytes: ArraySlice<UInt8>
    private var index: Int
    /// The message type's name, for error messages.
    let message: String

    init(_ bytes: ArraySlice<UInt8>, message: String) {
        self.bytes = bytes
        self.index = bytes.startIndex
        self.message = message
    }

    var remaining: Int { bytes.endIndex - index }

    /// A malformed-frame error about this message.
    func malformed(_ why: String) -> WireError { WireError(.malformedFrame, "\(message): \(why)") }

    mutating func u8(_ field: StaticString) throws(WireError) -> UInt8 {
        try need(1, field)
        defer { index += 1 }
        return bytes[index]
    }

    mutating func u16(_ field: StaticString) throws(WireError) -> UInt16 { try bigEndian(field) }

    mutating func u32(_ field: StaticString) throws(WireError) -> UInt32 { try bigEndian(field) }

    mutating func u64(_ field: StaticString) throws(WireError) -> UInt64 { try bigEndian(field) }

    mutating func raw(_ count: Int, _ field: StaticString) throws(WireError) -> ArraySlice<UInt8> {
        try need(count, field)
        defer { index += count }
        return bytes[index..<index + count]
    }

    /// A 32-byte id.
    mutating func id<ID: Identifier32>(_ field: StaticString) throws(WireError) -> ID {
        ID(unchecked: Data(try raw(32, field)))
    }

    /// `length` bytes of well-formed UTF-8.
    mutating func utf8(length: Int, _ field: StaticString) throws(WireError) -> String {
        let slice = try raw(length, field)
        guard let text = String(validating: slice, as: UTF8.self) else {
            throw malformed("\(field) is not valid UTF-8")
        }
        return text
    }

    /// Checks that `count` bytes remain, so that a count read from the wire can be checked before a loop or an
    /// allocation.
    func need(_ count: Int, _ field: StaticString) throws(WireError) {
        guard count <= remaining else { throw malformed("truncated at \(field)") }
    }

    /// Checks that the payload has been read to its last byte.
    func finish() throws(WireError) {
        guard remaining == 0 else {
            throw malformed("\(remaining) trailing byte\(remaining == 1 ? "" : "s") after the payload")
        }
    }

    private mutating func bigEndian<T: FixedWidthInteger>(_ field: StaticString) throws(WireError) -> T {
        let size = MemoryLayout<T>.size
        try need(size, field)
        var value: T = 0
        for offset in index..<index + size { value = value << 8 | T(bytes[offset]) }
        index += size
        return value
    }
}

/// The rules of the two text fields of the wire: a HELLO name and an ERROR message.
enum WireText {
    /// Why the text breaks the rules, or nil. Names are single-line (tab allowed), messages may also hold line feeds;
    /// neither may hold any other C0 control character or DEL. Names must not be blank (so not empty).
    static func problem(_ text: String, limit: Int, multiline: Bool, field: String) -> String? {
        let length = text.utf8.count
        guard length <= limit else { return "\(field) is \(length) bytes; the limit is \(limit)" }
        for scalar in text.unicodeScalars where !isAllowed(scalar, multiline: multiline) {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "\(field) contains control character U+\(String(repeating: "0", count: 4 - hex.count) + hex)"
        }
        if !multiline && TextRules.isBlank(text) { return "\(field) is blank" }
        return nil
    }

    /// The text with forbidden control characters replaced by U+FFFD, cut to at most `limit` bytes of UTF-8 at a
    /// character boundary. Valid text comes back unchanged.
    static func fitted(_ text: String, limit: Int, multiline: Bool) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            scalars.append(isAllowed(scalar, multiline: multiline) ? scalar : "\u{FFFD}")
        }
        let clean = String(scalars)
        guard clean.utf8.count > limit else { return clean }
        var result = ""
        var length = 0
        for character in clean {
            let size = character.utf8.count
            guard length + size <= limit else { break }
            result.append(character)
            length += size
        }
        return result
    }

    private static func isAllowed(_ scalar: Unicode.Scalar, multiline: Bool) -> Bool {
        let value = scalar.value
        guard value < 0x20 || value == 0x7F else { return true }
        return value == 0x09 || (multiline && value == 0x0A)
    }
}
