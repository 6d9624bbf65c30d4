import Foundation

/// Appends big-endian fixed-width integers and length-prefixed strings: the primitives of the canonical encoding.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ value: UInt8) { bytes.append(value) }

    mutating func u16(_ value: UInt16) { appendBigEndian(value) }

    mutating func u32(_ value: UInt32) { appendBigEndian(value) }

    mutating func u64(_ value: UInt64) { appendBigEndian(value) }

    mutating func i32(_ value: Int32) { appendBigEndian(UInt32(bitPattern: value)) }

    mutating func i64(_ value: Int64) { appendBigEndian(UInt64(bitPattern: value)) }

    mutating func raw(_ data: some Sequence<UInt8>) { bytes.append(contentsOf: data) }

    /// UTF-8 bytes behind a one-byte length. The caller has checked the length.
    mutating func string8(_ text: String) {
        u8(UInt8(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }

    /// UTF-8 bytes behind a two-byte big-endian length. The caller has checked the length.
    mutating func string16(_ text: String) {
        u16(UInt16(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
}

/// Reads what ``ByteWriter`` wrote, checking every length against the bytes that remain before it reads.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset: Int

    init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }

    mutating func u8(_ field: StaticString) throws(RecordError) -> UInt8 {
        try need(1, field)
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16(_ field: StaticString) throws(RecordError) -> UInt16 { try bigEndian(field) }

    mutating func u32(_ field: StaticString) throws(RecordError) -> UInt32 { try bigEndian(field) }

    mutating func u64(_ field: StaticString) throws(RecordError) -> UInt64 { try bigEndian(field) }

    mutating func i32(_ field: StaticString) throws(RecordError) -> Int32 {
        Int32(bitPattern: try bigEndian(field) as UInt32)
    }

    mutating func i64(_ field: StaticString) throws(RecordError) -> Int64 {
        Int64(bitPattern: try bigEndian(field) as UInt64)
    }

    mutating func raw(_ count: Int, _ field: StaticString) throws(RecordError) -> Data {
        try need(count, field)
        defer { offset += count }
        return Data(bytes[offset..<offset + count])
    }

    mutating func string8(_ field: StaticString, limit: Int) throws(RecordError) -> String {
        let length = Int(try u8(field))
        return try text(length: length, field, limit: limit)
    }

    mutating func string16(_ field: StaticString, limit: Int) throws(RecordError) -> String {
        let length = Int(try u16(field))
        return try text(length: length, field, limit: limit)
    }

    private mutating func text(length: Int, _ field: StaticString, limit: Int) throws(RecordError) -> String {
        guard length <= limit else { throw .tooLong(field: "\(field)", bytes: length, limit: limit) }
        try need(length, field)
        defer { offset += length }
        guard let string = String(validating: bytes[offset..<offset + length], as: UTF8.self) else {
            throw .malformed("\(field) is not valid UTF-8")
        }
        return string
    }

    private mutating func bigEndian<T: FixedWidthInteger>(_ field: StaticString) throws(RecordError) -> T {
        let size = MemoryLayout<T>.size
        try need(size, field)
        var value: T = 0
        for index in offset..<offset + size { value = value << 8 | T(bytes[index]) }
        offset += size
        return value
    }

    private func need(_ count: Int, _ field: StaticString) throws(RecordError) {
        guard count <= remaining else { throw .malformed("truncated at \(field)") }
    }
}
