import ContinuumCore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("Records: validation, signatures, ids")
struct RecordTests {
    let alice = try! NodeIdentity(seed: [UInt8](repeating: 7, count: 32))
    let bob = try! NodeIdentity(seed: [UInt8](repeating: 9, count: 32))

    func content(
        _ body: RecordBody,
        sequence: UInt64 = 1,
        previous: RecordID? = nil,
        author: NodeIdentity? = nil,
        createdAt: Int64 = 1_700_000_000_000
    ) -> RecordContent {
        RecordContent(
            author: (author ?? alice).author,
            sequence: sequence,
            previous: previous,
            createdAt: Timestamp(milliseconds: createdAt),
            body: body
        )
    }

    var samplePost: RecordBody {
        .post(
            caption: "Waterfall — Café",
            photo: PhotoReference(
                sha256: AssetHash.of(Data("x".utf8)),
                byteCount: 66_373,
                mediaType: .jpeg,
                width: 1024,
                height: 768
            ),
            location: Coordinate(latitude: 48.8566, longitude: 2.3522)
        )
    }

    @Test("a record decodes to what was signed, and its id is the SHA-256 of its bytes")
    func roundTrip() throws {
        let signed = try alice.sign(content(samplePost))
        let decoded = try SignedRecord(bytes: signed.bytes)
        #expect(decoded.content == signed.content)
        #expect(decoded.id == RecordID(bytes: Array(AssetHash.of(signed.bytes).bytes)))
        #expect(try decoded.verify().id == signed.id)
    }

    @Test("every single-bit flip of a signed record is rejected", arguments: [0, 1, 2, 3, 4])
    func bitFlips(kindIndex: Int) throws {
        let postID = PostID(hex: String(repeating: "5", count: 64))!
        let bodies: [RecordBody] = [
            .profile(name: "Alice"), samplePost, .comment(post: postID, text: "Nice!\nReally"),
            .edit(post: postID, caption: "New caption"),
            .delete(targets: [RecordID(hex: String(repeating: "1", count: 64))!, postID.record]),
        ]
        let record = try alice.sign(
            content(bodies[kindIndex], sequence: 2, previous: RecordID(hex: String(repeating: "a", count: 64)))
        )
        #expect(try SignedRecord(bytes: record.bytes).verify().id == record.id)
        var accepted: [Int] = []
        for bit in 0..<(record.bytes.count * 8) {
            var flipped = record.bytes
            flipped[bit / 8] ^= 1 << UInt8(bit % 8)
            if (try? SignedRecord(bytes: flipped).verify()) != nil { accepted.append(bit) }
        }
        #expect(accepted.isEmpty, "bits accepted after flipping: \(accepted)")
    }

    @Test("another author's key cannot pass for the signer")
    func forgedAuthor() throws {
        let record = try alice.sign(content(.profile(name: "Alice")))
        var forged = record.bytes
        forged.replaceSubrange(6..<38, with: bob.author.bytes)
        #expect(throws: RecordError.badSignature) { try SignedRecord(bytes: forged).verify() }
    }

    @Test("fields out of range are refused with a message naming them")
    func validation() throws {
        func refusal(_ content: RecordContent) -> String? {
            do {
                _ = try alice.sign(content)
                return nil
            } catch {
                return error.description
            }
        }
        let photo = PhotoReference(
            sha256: AssetHash.of(Data()),
            byteCount: 1,
            mediaType: .png,
            width: 1,
            height: 1
        )
        #expect(refusal(content(.profile(name: "   "))) == "out of range: name is blank")
        #expect(
            refusal(content(.profile(name: String(repeating: "n", count: 65)))) == "name is 65 bytes; the limit is 64"
        )
        #expect(refusal(content(.profile(name: "a\nb")))?.contains("control character U+000A") == true)
        #expect(
            refusal(content(.post(caption: String(repeating: "é", count: 1025), photo: photo, location: nil)))
                == "caption is 2050 bytes; the limit is 2048"
        )
        #expect(
            refusal(content(.comment(post: PostID(hex: String(repeating: "0", count: 64))!, text: "\t \n")))
                == "out of range: text is blank"
        )
        var zeroSize = photo
        zeroSize.byteCount = 0
        #expect(refusal(content(.post(caption: "c", photo: zeroSize, location: nil)))?.contains("photo size") == true)
        var wide = photo
        wide.width = 0
        #expect(refusal(content(.post(caption: "c", photo: wide, location: nil)))?.contains("each side") == true)
        let offEarth = Coordinate(latitudeE7: 900_000_001, longitudeE7: 0)
        #expect(
            refusal(content(.post(caption: "c", photo: photo, location: offEarth)))?.contains("not on Earth") == true
        )
        #expect(refusal(content(.delete(targets: [])))?.contains("at least one target") == true)
        let a = RecordID(hex: String(repeating: "a", count: 64))!
        let b = RecordID(hex: String(repeating: "b", count: 64))!
        #expect(refusal(content(.delete(targets: [b, a])))?.contains("strictly ascending") == true)
        #expect(refusal(content(.delete(targets: [a, a])))?.contains("strictly ascending") == true)
        #expect(refusal(content(.profile(name: "x"), sequence: 2))?.contains("previous must be present") == true)
        #expect(refusal(content(.profile(name: "x"), sequence: 0))?.contains("sequence 0 must be") == true)
        #expect(
            refusal(content(.profile(name: "x"), sequence: Limits.maxSequence + 1, previous: a))?.contains(
                "must be 1 ... 9007199254740991"
            ) == true
        )
        #expect(refusal(content(.profile(name: "x"), createdAt: -1))?.contains("createdAt") == true)
        #expect(refusal(content(.profile(name: "x"), previous: a))?.contains("previous must be present") == true)
    }

    @Test("malformed bytes are refused: truncation, trailing bytes, unknown kind or version, bad UTF-8")
    func malformed() throws {
        let record = try alice.sign(content(.profile(name: "Alice"))).bytes
        func reason(_ bytes: [UInt8]) -> String? {
            do {
                _ = try SignedRecord(bytes: bytes)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(reason(Array(record.dropLast())) == "malformed record: truncated at signature")
        #expect(reason(record + [0]) == "malformed record: 1 trailing bytes")
        #expect(reason(Array(record.prefix(10)))?.hasPrefix("malformed record: truncated at") == true)
        var kind = record
        kind[5] = 9
        #expect(reason(kind) == "malformed record: unknown record kind 9")
        var version = record
        version[4] = 2
        #expect(reason(version) == "malformed record: unknown record format version 2")
        var utf8 = record
        utf8[55] = 0xFF  // first byte of the name, after the 1-byte length at 54
        #expect(reason(utf8) == "malformed record: name is not valid UTF-8")
        #expect(reason([UInt8](repeating: 0, count: Limits.recordBytes + 1))?.contains("the limit is 16384") == true)
        #expect(reason([]) == "malformed record: truncated at magic")
    }

    @Test("timestamps print as RFC 3339 in UTC, as Foundation's formatter does")
    func rfc3339() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var random = SplitMix64(seed: 3)
        for _ in 0..<2000 {
            let millis = Int64.random(in: 0...Limits.latestTimestamp, using: &random)
            let stamp = Timestamp(milliseconds: millis)
            #expect(stamp.rfc3339 == formatter.string(from: stamp.date), "\(millis)")
        }
        #expect(Timestamp(milliseconds: 0).rfc3339 == "1970-01-01T00:00:00.000Z")
    }

    @Test("search folding ignores case and diacritics")
    func folding() {
        #expect(TextFolding.fold("Café") == "cafe")
        #expect(TextFolding.fold("CRÈME BRÛLÉE") == "creme brulee")
        #expect(TextFolding.fold("Ålesund naïve Zürich") == "alesund naive zurich")
        #expect(TextFolding.fold("Waterfall").contains(TextFolding.fold("WATER")))
    }

    @Test("id prefixes turn into byte ranges")
    func prefixes() throws {
        let prefix = try #require(IDPrefix("aBc"))
        #expect(Hex.encode(prefix.lowerBound) == "abc" + String(repeating: "0", count: 61))
        #expect(Hex.encode(prefix.upperBound) == "abc" + String(repeating: "f", count: 61))
        #expect(IDPrefix("xyz") == nil)
        #expect(IDPrefix("") == nil)
        #expect(IDPrefix(String(repeating: "a", count: 65)) == nil)
    }
}
