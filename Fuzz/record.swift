// libFuzzer target `record`: record bytes (format version 2: a signed header, then the content unless it was
// erased), as a RECORDS or PUSH frame carries them, through SignedRecord(bytes:) (RecordFormat.decode) and, for what
// decodes, the Ed25519 check. Built and run by scripts/fuzz.sh; Docs/FUZZING.md.
//
// Refusals (a RecordError) are expected. A bug is a crash, a trap, an AddressSanitizer report, or one of these
// checks failing for a record that decodes:
// - its header and its content (none when the record is a header alone, empty for a delete) are the input, in that
//   order, and the id is the SHA-256 of the header;
// - when the content is there: the content re-encodes (RecordFormat.encodeContent, with the salt it carries) to
//   exactly the content bytes, the header re-encodes (RecordFormat.encodeHeader) to exactly the header's signed
//   bytes, followed by the 64-byte signature (the encoding is canonical, so a record has one id), and
//   RecordFormat.validate accepts the content;
// - erased() is the header alone, which decodes again to the same header and id, and has no content (but a record
//   whose content length is 0, a delete, a member record or a kind to come without content, whose header is the whole
//   record);
// - verify() either refuses with badSignature or returns the same record, and then its header alone verifies too.

import ContinuumCore
import Foundation

/// When set, every input must decode and verify: scripts/fuzz.sh checks the seed corpus this way.
let expectValid = getenv("CONTINUUM_FUZZ_EXPECT_VALID") != nil

func fail(_ what: String, _ bytes: [UInt8]) -> Never {
    fatalError("record: \(what); input \(bytes.count) bytes: \(Hex.encode(bytes.prefix(256)))")
}

/// A record whose content length is 0 (a delete, a member record, a kind to come without content, PROTOCOL.md §2.8)
/// has no content: its header is the whole record, and its body is read from it.
func headerIsWhole(_ header: RecordHeader) -> Bool { !header.hasContent }

func check(_ bytes: [UInt8]) {
    let record: SignedRecord
    do throws(RecordError) {
        record = try SignedRecord(bytes: bytes)
    } catch {
        guard !error.description.isEmpty else { fail("a refusal without a message", bytes) }
        if expectValid { fail("seed does not decode: \(error)", bytes) }
        return
    }
    let header = record.headerBytes
    let kind = record.kind.name
    guard header + (record.contentBytes ?? []) == bytes else {
        fail("\(kind): header and content are not the input", bytes)
    }
    guard record.id == RecordID(bytes: AssetHash.of(header).bytes) else {
        fail("\(kind): id is not SHA-256(header)", bytes)
    }
    guard (record.body == nil) == (record.contentBytes == nil), record.isHeaderOnly == (record.body == nil),
        !headerIsWhole(record.header) || record.body != nil
    else { fail("\(kind): body and content bytes disagree", bytes) }
    if let content = record.content, let contentBytes = record.contentBytes {
        do throws(RecordError) {
            let salt =
                contentBytes.isEmpty
                ? [UInt8](repeating: 0, count: RecordFormat.saltBytes)
                : Array(contentBytes.prefix(RecordFormat.saltBytes))
            guard try RecordFormat.encodeContent(content, salt: salt) == contentBytes else {
                fail("\(kind): content re-encodes differently", bytes)
            }
            let signed = try RecordFormat.encodeHeader(content, contentBytes: contentBytes)
            guard signed.count + RecordFormat.signatureBytes == header.count, header.starts(with: signed),
                record.signature.elementsEqual(header.dropFirst(signed.count))
            else { fail("\(kind): header re-encodes differently", bytes) }
            try RecordFormat.validate(content)
        } catch {
            fail("decoded \(kind) fails encoding or validation: \(error)", bytes)
        }
    }
    let erased = record.erased()
    guard erased.bytes == header, erased.id == record.id, erased.header == record.header,
        headerIsWhole(record.header) ? erased == record : erased.body == nil
    else { fail("\(kind): erased() is not the header alone", bytes) }
    do throws(RecordError) {
        let alone = try SignedRecord(bytes: header)
        guard alone == erased else { fail("\(kind): the header alone decodes to another record", bytes) }
    } catch {
        fail("\(kind): the header alone of a record that decodes is refused: \(error)", bytes)
    }
    do throws(RecordError) {
        let verified = try record.verify()
        guard verified.record == record else { fail("verify() returned another record", bytes) }
        guard (try? erased.verify()) != nil else { fail("\(kind): the header alone does not verify", bytes) }
    } catch {
        guard error == .badSignature else { fail("verify() threw \(error)", bytes) }
        if expectValid { fail("seed does not verify", bytes) }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecord(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    check(data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? [])
    return 0
}
