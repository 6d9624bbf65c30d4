import ContinuumCore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("Records of kinds this node does not know (PROTOCOL.md §2.8): laid out alike, verified, kept as bytes")
struct UnknownKindTests {
    let alice = try! NodeIdentity(seed: [UInt8](repeating: 7, count: 32))
    let post = PostID(unchecked: Data(repeating: 0xAB, count: 32))

    func sign(_ references: OpaqueReferences, payload: [UInt8], sequence: UInt64 = 1) throws -> VerifiedRecord {
        try alice.sign(
            RecordContent(
                author: alice.author,
                sequence: sequence,
                previous: sequence == 1 ? nil : RecordID(unchecked: Data(repeating: 1, count: 32)),
                createdAt: Timestamp(milliseconds: 1_700_000_000_000),
                body: .opaque(references, payload: payload)
            )
        )
    }

    func reason(_ bytes: [UInt8]) -> String? {
        do {
            _ = try SignedRecord(bytes: bytes)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("kind 200 with a post, three bytes of references and a content: its bytes, as §2.8 lays them out")
    func layout() throws {
        let record = try sign(OpaqueReferences(code: 200, context: post, data: [1, 2, 3]), payload: Array("hi!".utf8))
        let bytes = record.bytes
        // A header of 54 + 32 (context) + 2 + 3 + 4 + 32 + 64 bytes, then the salt and the 3 bytes.
        #expect(bytes.count == 191 + 16 + 3)
        #expect(bytes[4] == 2 && bytes[5] == 200)
        #expect(Array(bytes[54..<86]) == [UInt8](repeating: 0xAB, count: 32))
        #expect(Array(bytes[86..<91]) == [0, 3, 1, 2, 3])
        #expect(Array(bytes[91..<95]) == [0, 0, 0, 19])
        #expect(Array(bytes[(bytes.count - 3)...]) == Array("hi!".utf8))
        // Read back: the same body, the same id, re-encoded bit for bit; the kind is unknown, its code kept.
        let read = try SignedRecord(bytes: bytes).verify()
        #expect(read.id == record.id && read.bytes == bytes)
        #expect(read.header.kind == .unknown && read.header.kindCode == 200)
        #expect(
            read.body == .opaque(OpaqueReferences(code: 200, context: post, data: [1, 2, 3]), payload: [104, 105, 33])
        )
        #expect(read.header.references.posts == [post])
        // Its header alone is a valid record too: same id, no content.
        let alone = try SignedRecord(bytes: record.record.erased().bytes).verify()
        #expect(alone.id == record.id && alone.record.isHeaderOnly && alone.bytes.count == 191)
    }

    @Test("no post (32 zero bytes), no references and no content: whole and header alone are the same bytes")
    func empty() throws {
        let record = try sign(OpaqueReferences(code: 8, context: nil), payload: [], sequence: 2)
        // 86 (sequence 2) + 32 + 2 + 4 + 32 + 64.
        #expect(record.bytes.count == 220)
        #expect(Array(record.bytes[86..<120]) == [UInt8](repeating: 0, count: 34))
        let read = try SignedRecord(bytes: record.bytes)
        #expect(read.body == .opaque(OpaqueReferences(code: 8, context: nil), payload: []))
        #expect(read.header.references.posts.isEmpty && !read.isHeaderOnly)
        #expect(read.header.contentHash == RecordFormat.emptyContentHash)
    }

    @Test("the largest record of an unknown kind fits the record limit, and one byte more is refused")
    func limits() throws {
        let data = [UInt8](repeating: 5, count: Limits.opaqueDataBytes)
        let payload = [UInt8](repeating: 6, count: Limits.opaqueContentBytes - 16)
        let largest = try sign(OpaqueReferences(code: 255, context: post, data: data), payload: payload, sequence: 9)
        #expect(largest.bytes.count == 86 + 32 + 2 + 4096 + 100 + 8192)
        #expect(largest.bytes.count <= Limits.recordBytes)
        #expect(throws: RecordError.tooLong(field: "references", bytes: 4097, limit: 4096)) {
            try sign(OpaqueReferences(code: 255, context: nil, data: data + [0]), payload: [])
        }
        #expect(throws: RecordError.tooLong(field: "content", bytes: 8177, limit: 8176)) {
            try sign(OpaqueReferences(code: 255, context: nil), payload: payload + [0])
        }
        #expect(throws: RecordError.outOfRange("kind 7 is defined; an unknown kind's code is 8 ... 255")) {
            try sign(OpaqueReferences(code: 7, context: nil), payload: [])
        }
    }

    @Test("bytes a node refuses: a data length over 4096, a content length of 1 … 16, content that does not match")
    func refused() throws {
        let record = try sign(OpaqueReferences(code: 200, context: nil, data: [9]), payload: Array("abc".utf8))
        var header = record.record.headerBytes
        // The data length (offset 54 + 32) says 4097.
        var long = header
        long[86] = 0x10
        long[87] = 0x01
        #expect(reason(long) == "references of kind 200 is 4097 bytes; the limit is 4096")
        // The content length (after the data) says 16: a salt and nothing.
        header[89 + 3] = 16
        #expect(reason(header) == "out of range: content length 16 of a record of an unknown kind must be 17 ... 8192")
        var changed = record.bytes
        changed[changed.count - 1] ^= 1
        #expect(reason(changed)?.hasPrefix("the content does not match its header") == true)
    }
}
