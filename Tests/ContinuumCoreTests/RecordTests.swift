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

    @Test("a record decodes to what was signed, and its id is the SHA-256 of its header")
    func roundTrip() throws {
        let signed = try alice.sign(content(samplePost))
        let decoded = try SignedRecord(bytes: signed.bytes)
        #expect(decoded.content == signed.content)
        #expect(decoded.id == RecordID(bytes: Array(AssetHash.of(decoded.headerBytes).bytes)))
        #expect(decoded.headerBytes + (decoded.contentBytes ?? []) == signed.bytes)
        #expect(try decoded.verify().id == signed.id)
        #expect(Int(decoded.header.contentLength) == decoded.contentBytes?.count)
        #expect(decoded.header.contentHash == AssetHash.of(decoded.contentBytes ?? []).bytes)
    }

    @Test("the same content signed twice gets two salts, so two records with two ids")
    func salted() throws {
        let first = try alice.sign(content(samplePost))
        let second = try alice.sign(content(samplePost))
        #expect(first.content == second.content)
        #expect(first.id != second.id)
        #expect(first.record.contentBytes?.prefix(RecordFormat.saltBytes) != second.record.contentBytes?.prefix(16))
        let salt = [UInt8](repeating: 0x5A, count: RecordFormat.saltBytes)
        let salted = try alice.sign(content(samplePost), salt: salt)
        #expect(salted.record.contentBytes.map { Array($0.prefix(RecordFormat.saltBytes)) } == salt)
    }

    @Test("erased() gives the header alone: same id, same header, no content, and it still verifies")
    func erasure() throws {
        let postID = PostID(hex: String(repeating: "5", count: 64))!
        let bodies: [RecordBody] = [
            .profile(name: "Alice"), samplePost, .comment(post: postID, text: "Nice!"),
            .edit(post: postID, change: PostChange(photo: samplePhoto, location: .removed)),
        ]
        for body in bodies {
            let whole = try alice.sign(content(body))
            let erased = whole.erased()
            #expect(erased.id == whole.id)
            #expect(erased.header == whole.header)
            #expect(erased.bytes == whole.record.headerBytes)
            #expect(erased.bytes.count < whole.bytes.count)
            #expect(erased.body == nil && erased.content == nil && erased.record.contentBytes == nil)
            #expect(erased.record.isHeaderOnly)
            // The header alone decodes and verifies on its own, as a node that receives it does.
            let received = try SignedRecord(bytes: erased.bytes).verify()
            #expect(received == erased)
            #expect(received.header.references == body.references)
            // And the whole record received later is the same record, with its content.
            let restored = try SignedRecord(bytes: whole.bytes).verify()
            #expect(restored.id == received.id && restored.content == whole.content)
        }
        // A delete has no content: erasing it changes nothing.
        let delete = try alice.sign(content(.delete(targets: [postID.record])))
        #expect(delete.erased() == delete)
        #expect(delete.record.contentBytes == [])
        #expect(delete.content?.body == .delete(targets: [postID.record]))
        #expect(delete.header.contentHash == RecordFormat.emptyContentHash)
    }

    @Test("a content that does not match its header is refused as contentMismatch")
    func contentMismatch() throws {
        func isMismatch(_ bytes: [UInt8]) -> Bool {
            do {
                _ = try SignedRecord(bytes: bytes)
                return false
            } catch {
                if case .contentMismatch = error { return true }
                return false
            }
        }
        let record = try alice.sign(content(.profile(name: "Alice")))
        let other = try alice.sign(content(.profile(name: "Alicf")))
        let header = record.record.headerBytes
        var altered = record.bytes
        altered[altered.count - 1] ^= 0x01
        #expect(isMismatch(altered))
        #expect(isMismatch(header + other.record.contentBytes!))
        #expect(isMismatch(Array(record.bytes.dropLast())))
        #expect(isMismatch(record.bytes + [0]))
        #expect(isMismatch(header + [0]))
        let delete = try alice.sign(content(.delete(targets: [record.id])))
        #expect(isMismatch(delete.bytes + [0]))
        #expect(!isMismatch(header) && !isMismatch(record.bytes) && !isMismatch(delete.bytes))
        #expect(throws: RecordError.contentMismatch("its SHA-256 is not the one the header gives")) {
            try SignedRecord(bytes: altered)
        }
        #expect(throws: RecordError.contentMismatch("the content is 21 bytes; the header says 22")) {
            try SignedRecord(bytes: Array(record.bytes.dropLast()))
        }
    }

    @Test("a version 1 record is refused with a message that says so")
    func versionOne() throws {
        // A version 1 profile as it was written: magic, version 1, kind, author, sequence, createdAt, name, and a
        // signature over all that (version 1 had no content hash). Refused before its signature is looked at.
        var v1: [UInt8] = RecordFormat.magic + [1, 1] + Array(alice.author.bytes)
        v1 += [0, 0, 0, 0, 0, 0, 0, 1] + [0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00] + [5] + Array("Alice".utf8)
        v1 += [UInt8](repeating: 0xAB, count: RecordFormat.signatureBytes)
        do {
            _ = try SignedRecord(bytes: v1)
            Issue.record("a version 1 record was accepted")
        } catch {
            #expect(error.description.contains("version 1"), "\(error.description)")
            #expect(error == .malformed("record format version 1 is not read any more; this node reads version 2"))
        }
    }

    /// The largest record of each kind: sequence > 1, every optional field there, every text at its limit.
    func largest(_ kind: RecordKind) -> RecordBody {
        let photo = PhotoReference(
            sha256: AssetHash.of(Data("x".utf8)),
            byteCount: Limits.photoBytes,
            mediaType: .jpeg,
            width: Limits.photoDimension,
            height: Limits.photoDimension,
            takenAt: Timestamp(milliseconds: Limits.latestTimestamp),
            thumbnail: ThumbnailReference(sha256: AssetHash.of(Data("t".utf8)), byteCount: 65_536)
        )
        let location = Coordinate(latitudeE7: -900_000_000, longitudeE7: 1_800_000_000)
        let post = PostID(hex: String(repeating: "c", count: 64))!
        let caption = String(repeating: "é", count: Limits.captionBytes / 2)
        switch kind {
        case .profile: return .profile(name: String(repeating: "n", count: Limits.nameBytes))
        case .post: return .post(caption: caption, photo: photo, location: location)
        case .comment: return .comment(post: post, text: String(repeating: "t", count: Limits.commentBytes))
        case .edit:
            return .edit(post: post, change: PostChange(caption: caption, photo: photo, location: .set(location)))
        case .delete:
            return .delete(
                targets: (0..<Limits.deleteTargets).map { index in
                    RecordID(bytes: [UInt8](repeating: 0, count: 30) + [UInt8(index >> 8), UInt8(index & 0xFF)])!
                }
            )
        case .group:
            return .group(
                GroupFounding(
                    node: NodeID(hex: String(repeating: "d", count: 64))!,
                    name: String(repeating: "n", count: Limits.nameBytes),
                    open: true
                )
            )
        case .member:
            return .member(
                MemberChange(
                    group: GroupID(hex: String(repeating: "e", count: 64))!,
                    action: .remove,
                    node: NodeID(hex: String(repeating: "d", count: 64))!,
                    log: AuthorID(hex: String(repeating: "f", count: 64))!,
                    through: Limits.maxSequence
                )
            )
        case .unknown:
            return .opaque(
                OpaqueReferences(code: 255, context: post, data: [UInt8](repeating: 1, count: Limits.opaqueDataBytes)),
                payload: [UInt8](repeating: 2, count: Limits.opaqueContentBytes - 16)
            )
        }
    }

    @Test("the largest record of each kind encodes, decodes, and is as long as the table of PROTOCOL.md §2.5 says")
    func sizeLimits() throws {
        // Kind: (largest content, largest record), PROTOCOL.md §2.5.
        let table: [RecordKind: (content: Int, record: Int)] = [
            .profile: (81, 267), .post: (2169, 2355), .comment: (4114, 4332), .edit: (2169, 2387), .delete: (0, 8380),
            .group: (81, 268), .member: (0, 291), .unknown: (8192, 12508),
        ]
        let previous = RecordID(hex: String(repeating: "a", count: 64))!
        for kind in RecordKind.allCases {
            // A group record is always the first of its log; every other kind is largest further on (previous there).
            let record =
                kind == .group
                ? try alice.sign(content(largest(kind)))
                : try alice.sign(content(largest(kind), sequence: 2, previous: previous))
            let expected = try #require(table[kind])
            #expect(record.record.contentBytes?.count == expected.content, "\(kind.name): content")
            #expect(Limits.contentBytes(kind) == expected.content, "\(kind.name): Limits.contentBytes")
            #expect(record.bytes.count == expected.record, "\(kind.name): record")
            #expect(record.bytes.count <= Limits.recordBytes, "\(kind.name): within Limits.recordBytes")
            #expect(try SignedRecord(bytes: record.bytes).verify() == record, "\(kind.name): decodes")
        }
        // One byte more of text is refused.
        let over: [RecordBody] = [
            .profile(name: String(repeating: "n", count: Limits.nameBytes + 1)),
            .comment(post: PostID(previous), text: String(repeating: "t", count: Limits.commentBytes + 1)),
            .edit(post: PostID(previous), caption: String(repeating: "c", count: Limits.captionBytes + 1)),
        ]
        for body in over {
            #expect(throws: RecordError.self) { try alice.sign(content(body)) }
        }
    }

    @Test("edits: any of caption, photo and location, at least one; removing the location alone is 17 bytes")
    func edits() throws {
        let post = PostID(hex: String(repeating: "e", count: 64))!
        let changes: [PostChange] = [
            PostChange(caption: "New caption"),
            PostChange(photo: samplePhoto),
            PostChange(location: .set(Coordinate(latitudeE7: 1, longitudeE7: -1))),
            PostChange(location: .removed),
            PostChange(caption: "c", photo: samplePhoto, location: .removed),
        ]
        for change in changes {
            let record = try alice.sign(content(.edit(post: post, change: change)))
            let decoded = try SignedRecord(bytes: record.bytes).verify()
            #expect(decoded.body == .edit(post: post, change: change))
            #expect(decoded.header.references == .post(post))
        }
        let removal = try alice.sign(content(.edit(post: post, change: PostChange(location: .removed))))
        #expect(removal.record.contentBytes?.count == RecordFormat.saltBytes + 1)
        #expect(removal.record.contentBytes?.last == 0x08)
        #expect(throws: RecordError.outOfRange("an edit must change the caption, photo or location")) {
            try alice.sign(content(.edit(post: post, change: PostChange())))
        }
    }

    var samplePhoto: PhotoReference {
        PhotoReference(
            sha256: AssetHash.of(Data("y".utf8)),
            byteCount: 2_500_000,
            mediaType: .webp,
            width: 4032,
            height: 3024,
            takenAt: Timestamp(milliseconds: 1_600_000_000_000)
        )
    }

    @Test(
        "every single-bit flip of a signed record, whole or header alone, is rejected",
        arguments: [0, 1, 2, 3, 4, 5]
    )
    func bitFlips(kindIndex: Int) throws {
        let postID = PostID(hex: String(repeating: "5", count: 64))!
        let bodies: [RecordBody] = [
            .profile(name: "Alice"), samplePost, .comment(post: postID, text: "Nice!\nReally"),
            .edit(post: postID, caption: "New caption"),
            .edit(
                post: postID,
                change: PostChange(photo: samplePhoto, location: .set(Coordinate(latitudeE7: 5, longitudeE7: 6)))
            ),
            .delete(targets: [RecordID(hex: String(repeating: "1", count: 64))!, postID.record]),
        ]
        let record = try alice.sign(
            content(bodies[kindIndex], sequence: 2, previous: RecordID(hex: String(repeating: "a", count: 64)))
        )
        for bytes in [record.bytes, record.erased().bytes] {
            #expect(try SignedRecord(bytes: bytes).verify().id == record.id)
            var accepted: [Int] = []
            for bit in 0..<(bytes.count * 8) {
                var flipped = bytes
                flipped[bit / 8] ^= 1 << UInt8(bit % 8)
                if (try? SignedRecord(bytes: flipped).verify()) != nil { accepted.append(bit) }
            }
            #expect(accepted.isEmpty, "\(bytes.count) bytes: bits accepted after flipping: \(accepted)")
        }
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
        var early = photo
        early.takenAt = Timestamp(milliseconds: -1)
        #expect(
            refusal(content(.post(caption: "c", photo: early, location: nil)))
                == "out of range: takenAt -1 is outside 1970 ... 9999"
        )
        early.takenAt = Timestamp(milliseconds: Limits.latestTimestamp + 1)
        let postID = PostID(hex: String(repeating: "0", count: 64))!
        #expect(
            refusal(content(.edit(post: postID, change: PostChange(photo: early))))?.contains("takenAt") == true
        )
        #expect(
            refusal(content(.edit(post: postID, change: PostChange(location: .set(offEarth)))))?.contains(
                "not on Earth"
            ) == true
        )
        #expect(refusal(content(.edit(post: postID, caption: " ")))?.contains("caption is blank") == true)
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

    @Test("malformed bytes are refused: truncation, content of the wrong length, unknown kind or version")
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
        // A profile at sequence 1: a header of 54 + 100 bytes, then 16 + 1 + 5 bytes of content.
        #expect(record.count == 154 + 22)
        let header = Array(record.prefix(154))
        #expect(reason(Array(header.dropLast())) == "malformed record: truncated at signature")
        #expect(reason(Array(header.prefix(70))) == "malformed record: truncated at content hash")
        #expect(
            reason(Array(record.dropLast()))
                == "the content does not match its header: the content is 21 bytes; the header says 22"
        )
        #expect(
            reason(record + [0]) == "the content does not match its header: the content is 23 bytes; the header says 22"
        )
        #expect(reason(Array(record.prefix(10)))?.hasPrefix("malformed record: truncated at") == true)
        var kind = record
        kind[5] = 0
        #expect(reason(kind) == "malformed record: record kind 0 is not defined; kinds are 1 ... 255")
        // Kinds 8 … 255 are laid out alike (§2.8): a profile's bytes under kind 9 do not parse as one.
        kind[5] = 9
        #expect(reason(kind) != nil)
        var version = record
        version[4] = 3
        #expect(reason(version) == "malformed record: unknown record format version 3")
        version[4] = 1
        #expect(reason(version)?.contains("version 1 is not read any more") == true)
        var length = header
        length[54 + 3] = 17  // the content length's last byte: 17 is below a profile's smallest content
        #expect(reason(length) == "out of range: content length 17 of a profile must be 18 ... 81")
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
