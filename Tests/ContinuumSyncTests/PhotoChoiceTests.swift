import ContinuumCore
import Foundation
import Testing

@testable import ContinuumSync

/// Which peer the photo fetcher asks for a photo (``PhotoFetcher`` `sharing`, `choose`, `mix`), and how its lacks are
/// read back and saved (`entries`, `lacks`).
@Suite("Photo choice: whom a photo is asked of")
struct PhotoChoiceTests {
    /// 32 bytes, all `byte`.
    static func bytes(_ byte: UInt8) -> Data { Data(repeating: byte, count: 32) }

    let a = AuthorID(unchecked: Self.bytes(1))
    let b = AuthorID(unchecked: Self.bytes(2))
    let c = AuthorID(unchecked: Self.bytes(3))
    let family = GroupID(unchecked: Self.bytes(0x41))
    let work = GroupID(unchecked: Self.bytes(0x42))
    let club = GroupID(unchecked: Self.bytes(0x43))
    /// A photo whose hash is 32 bytes of 3: of two equally loaded peers, `a` is asked first (see `spread`).
    let hash = AssetHash(unchecked: Self.bytes(3))
    let now = ContinuousClock.now

    /// `choose` for `hash` with nothing distrusted and a fresh lack book unless given.
    func choose(
        _ hash: AssetHash? = nil,
        among peers: [AuthorID],
        load: [AuthorID: Int] = [:],
        ready: Set<AuthorID>? = nil,
        distrusted: Set<LackBook.Key> = [],
        book: inout LackBook,
        at now: ContinuousClock.Instant? = nil
    ) -> AuthorID? {
        PhotoFetcher.choose(
            hash ?? self.hash,
            among: peers,
            load: load,
            ready: ready ?? Set(peers),
            distrusted: distrusted,
            in: &book,
            now: now ?? self.now
        )
    }

    @Test("only peers whose sessions share a group of the photo's posts are asked, in the order given")
    func sharing() {
        let photo = MissingPhoto(
            hash: hash,
            bytes: 1000,
            post: PostID(unchecked: Self.bytes(9)),
            groups: [family, work]
        )
        let peers: [(peer: AuthorID, groups: Set<GroupID>)] = [
            (c, [work, club]), (a, [club]), (b, [family]), (AuthorID(unchecked: Self.bytes(4)), []),
        ]
        #expect(PhotoFetcher.sharing(photo, peers) == [c, b])
        let nowhere = MissingPhoto(hash: hash, bytes: 1000, post: PostID(unchecked: Self.bytes(9)))
        #expect(PhotoFetcher.sharing(nowhere, peers) == [])
    }

    @Test("the least loaded ready peer is chosen")
    func leastLoaded() {
        var book = LackBook()
        #expect(choose(among: [a, b, c], load: [a: 2, b: 0, c: 1], book: &book) == b)
        #expect(choose(among: [a, b, c], load: [a: 2, c: 1], book: &book) == b, "no entry is no load")
        #expect(choose(among: [a, b, c], load: [a: 2, b: 0, c: 1], ready: [a, c], book: &book) == c)
        #expect(choose(among: [a, b, c], load: [a: 2, b: 3, c: 1], ready: [a, b], book: &book) == a)
    }

    @Test("a peer distrusted for this photo is skipped; distrust of another photo does not count")
    func distrusted() {
        var book = LackBook()
        let load = [a: 2, b: 0, c: 1]
        let other = AssetHash(unchecked: Self.bytes(7))
        let bad: Set = [LackBook.Key(peer: b, hash: hash)]
        #expect(choose(among: [a, b, c], load: load, distrusted: bad, book: &book) == c)
        let elsewhere: Set = [LackBook.Key(peer: b, hash: other)]
        #expect(choose(among: [a, b, c], load: load, distrusted: elsewhere, book: &book) == b)
    }

    @Test("a peer that lacked the photo is skipped until its back-off is over")
    func lacked() {
        var book = LackBook()
        book.lacked(hash, by: b, now: now)
        let load = [a: 2, b: 0, c: 1]
        #expect(choose(among: [a, b, c], load: load, book: &book, at: now + .milliseconds(1999)) == c)
        #expect(choose(among: [a, b, c], load: load, book: &book, at: now + .seconds(2)) == b)
    }

    @Test("nobody ready, everyone distrusted or lacking, or no peer at all: nil")
    func nobody() {
        var book = LackBook()
        #expect(choose(among: [], book: &book) == nil)
        #expect(choose(among: [a, b], ready: [c], book: &book) == nil)
        let bad: Set = [LackBook.Key(peer: a, hash: hash), LackBook.Key(peer: b, hash: hash)]
        #expect(choose(among: [a, b], distrusted: bad, book: &book) == nil)
        book.lacked(hash, by: a, now: now)
        book.lacked(hash, by: b, now: now)
        #expect(choose(among: [a, b], book: &book) == nil)
    }

    @Test("with equal load the order differs from photo to photo, and not by the order the peers are given in")
    func spread() {
        // FNV-1a over the interleaved bytes, worked out apart from this code: for the hash of 32 threes `a` mixes
        // lower than `b`; for 32 fours `b` does.
        let three = AssetHash(unchecked: Self.bytes(3))
        let four = AssetHash(unchecked: Self.bytes(4))
        var book = LackBook()
        #expect(choose(three, among: [a, b], book: &book) == a)
        #expect(choose(three, among: [b, a], book: &book) == a)
        #expect(choose(four, among: [a, b], book: &book) == b)
        #expect(choose(four, among: [b, a], book: &book) == b)
        // Load comes first: the less loaded wins whatever the mix says.
        #expect(choose(four, among: [a, b], load: [b: 1], book: &book) == a)
        #expect(choose(three, among: [a, b], load: [a: 1], book: &book) == b)
    }

    @Test("mix is FNV-1a over the two ids' bytes interleaved")
    func mix() {
        // FNV-1a 64 of "ab" (0x61 then 0x62), and of nothing (the offset basis).
        #expect(PhotoFetcher.mix(Data([0x61]), Data([0x62])) == 0x089c_4407_b545_986a)
        #expect(PhotoFetcher.mix(Data(), Data([0x62])) == 0xcbf2_9ce4_8422_2325)
        #expect(PhotoFetcher.mix(Self.bytes(3), Self.bytes(1)) == 0x7a72_6cad_2636_dda5)
        #expect(PhotoFetcher.mix(Self.bytes(3), Self.bytes(2)) == 0xee92_1cf9_7df2_ebe5)
    }

    @Test("a saved lack comes due after its wait on this run's clock, at most the longest back-off away")
    func entries() {
        let wall: Int64 = 1_800_000_000_000
        let later = AssetHash(unchecked: Self.bytes(5))
        let past = AssetHash(unchecked: Self.bytes(6))
        let far = AssetHash(unchecked: Self.bytes(7))
        let saved = [
            PeerLack(peer: a, hash: hash, kind: .photo, retryAt: Timestamp(milliseconds: wall + 5000), attempts: 2),
            PeerLack(peer: a, hash: past, kind: .photo, retryAt: Timestamp(milliseconds: wall - 60_000), attempts: 1),
            // The wall clock went back a day since it was saved: still at most 30 minutes.
            PeerLack(
                peer: a,
                hash: far,
                kind: .photo,
                retryAt: Timestamp(milliseconds: wall + 86_400_000),
                attempts: 9
            ),
            PeerLack(peer: a, hash: later, kind: .thumbnail, retryAt: Timestamp(milliseconds: wall), attempts: 1),
        ]
        let photos = PhotoFetcher.entries(saved, .photo, nowWall: wall, now: now)
        #expect(
            photos == [
                hash: LackBook.Entry(retryAt: now + .seconds(5), attempts: 2),
                past: LackBook.Entry(retryAt: now, attempts: 1),
                far: LackBook.Entry(retryAt: now + .seconds(1800), attempts: 9),
            ]
        )
        let thumbnails = PhotoFetcher.entries(saved, .thumbnail, nowWall: wall, now: now)
        #expect(thumbnails == [later: LackBook.Entry(retryAt: now, attempts: 1)])
    }

    @Test("a lack book's changes are saved on the wall clock; a removed entry is saved with 0 attempts")
    func lacks() {
        let wall: Int64 = 1_800_000_000_000
        let other = AssetHash(unchecked: Self.bytes(5))
        let overdue = AssetHash(unchecked: Self.bytes(6))
        let saved = PhotoFetcher.lacks(
            [
                (a, hash, LackBook.Entry(retryAt: now + .seconds(7), attempts: 2)),
                (b, other, nil),
                (c, overdue, LackBook.Entry(retryAt: now - .seconds(3), attempts: 4)),
            ],
            .thumbnail,
            nowWall: wall,
            now: now
        )
        #expect(
            saved == [
                PeerLack(
                    peer: a,
                    hash: hash,
                    kind: .thumbnail,
                    retryAt: Timestamp(milliseconds: wall + 7000),
                    attempts: 2
                ),
                PeerLack(peer: b, hash: other, kind: .thumbnail, retryAt: Timestamp(milliseconds: wall), attempts: 0),
                PeerLack(peer: c, hash: overdue, kind: .thumbnail, retryAt: Timestamp(milliseconds: wall), attempts: 4),
            ]
        )
    }
}
