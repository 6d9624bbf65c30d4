import ContinuumCore
import ContinuumSync
import Foundation
import Testing

/// What peers lacked, and when to ask them again: one probe per peer, back-offs, news.
@Suite("Lack book: re-asks in proportion to news, not to what is missing")
struct LackBookTests {
    private let start = ContinuousClock.now
    private let peer = AuthorID(unchecked: LackBookProbeTests.id32(1))
    private let other = AuthorID(unchecked: LackBookProbeTests.id32(2))
    private let photos = (0..<1000).map { AssetHash(unchecked: LackBookProbeTests.id32(100 + $0)) }

    /// How many of `photos` the book lets the fetcher ask `peer` for at `now`.
    private func asks(_ book: inout LackBook, _ peer: AuthorID, at now: ContinuousClock.Instant) -> Int {
        photos.filter { book.mayAsk($0, of: peer, now: now) }.count
    }

    @Test("a peer with no entry is asked for everything; one that lacked everything is asked once per back-off")
    func probeOncePerBackoff() {
        var book = LackBook()
        #expect(asks(&book, peer, at: start) == 1000)
        for photo in photos { book.lacked(photo, by: peer, now: start) }
        // Before the back-off: nothing.
        #expect(asks(&book, peer, at: start + .seconds(1)) == 0)
        // Due: one probe only, however many are due.
        let due = start + LackBook.backoff(attempts: 1)
        #expect(asks(&book, peer, at: due) == 1)
        #expect(asks(&book, peer, at: due) == 1, "the same probe, not a second one")
    }

    @Test("a failed probe parks every due entry until the probe's next back-off")
    func failedProbeParksAll() throws {
        var book = LackBook()
        for photo in photos { book.lacked(photo, by: peer, now: start) }
        let due = start + LackBook.backoff(attempts: 1)
        let probe = try #require(photos.first { book.mayAsk($0, of: peer, now: due) })
        book.lacked(probe, by: peer, now: due)
        #expect(asks(&book, peer, at: due + .milliseconds(1)) == 0)
        let next = due + LackBook.backoff(attempts: 2)
        #expect(LackBook.backoff(attempts: 2) == LackBook.backoff(attempts: 1) * 2)
        #expect(asks(&book, peer, at: next) == 1)
    }

    @Test("a probe answered with the photo opens the rest")
    func suppliedProbeOpens() throws {
        var book = LackBook()
        for photo in photos { book.lacked(photo, by: peer, now: start) }
        let due = start + LackBook.backoff(attempts: 1)
        let probe = try #require(photos.first { book.mayAsk($0, of: peer, now: due) })
        book.supplied(probe, by: peer)
        #expect(asks(&book, peer, at: due) == 999 + 1, "the rest, and the supplied one has no entry any more")
    }

    @Test("news from a peer makes its entries due at once, through one probe; other peers are unaffected")
    func newsThroughOneProbe() {
        var book = LackBook()
        for photo in photos {
            book.lacked(photo, by: peer, now: start)
            book.lacked(photo, by: other, now: start)
        }
        book.news(from: peer, now: start + .milliseconds(10))
        #expect(asks(&book, peer, at: start + .milliseconds(10)) == 1)
        #expect(asks(&book, other, at: start + .milliseconds(10)) == 0)
    }

    @Test("back-offs double from 2 s up to 30 min")
    func backoffs() {
        #expect(LackBook.backoff(attempts: 1) == .seconds(2))
        #expect(LackBook.backoff(attempts: 2) == .seconds(4))
        #expect(LackBook.backoff(attempts: 5) == .seconds(32))
        #expect(LackBook.backoff(attempts: 40) == .seconds(1800))
    }

    @Test("changes come out once, for saving; a photo's arrival forgets every peer's lack of it")
    func changesAndArrival() {
        var book = LackBook()
        book.lacked(photos[0], by: peer, now: start)
        book.lacked(photos[0], by: other, now: start)
        let first = book.takeChanges()
        let second = book.takeChanges()
        #expect(first.count == 2)
        #expect(second.isEmpty)
        book.arrived(photos[0])
        let changes = book.takeChanges()
        #expect(changes.count == 2)
        #expect(changes.allSatisfy { $0.entry == nil })
        let asked = book.mayAsk(photos[0], of: peer, now: start)
        #expect(asked)
    }

    @Test("entries loaded from the store do not replace newer ones in memory")
    func loadKeepsNewer() {
        var book = LackBook()
        book.lacked(photos[0], by: peer, now: start)
        book.load(
            [
                photos[0]: .init(retryAt: start, attempts: 9),
                photos[1]: .init(retryAt: start + .seconds(60), attempts: 3),
            ],
            for: peer
        )
        let kept = book.mayAsk(photos[0], of: peer, now: start + .seconds(1))
        let early = book.mayAsk(photos[1], of: peer, now: start + .seconds(30))
        let due = book.mayAsk(photos[1], of: peer, now: start + .seconds(61))
        #expect(!kept, "kept the in-memory back-off")
        #expect(!early)
        #expect(due)
    }
}

@Suite("Lack book: probes that end without an answer")
struct LackBookProbeTests {
    private let start = ContinuousClock.now
    private let peer = AuthorID(unchecked: LackBookProbeTests.id32(1))
    private let photos = (0..<10).map { AssetHash(unchecked: LackBookProbeTests.id32(100 + $0)) }

    private func due(_ book: inout LackBook) throws -> (AssetHash, ContinuousClock.Instant) {
        for photo in photos { book.lacked(photo, by: peer, now: start) }
        let due = start + LackBook.backoff(attempts: 1)
        let probe = try #require(photos.first { book.mayAsk($0, of: peer, now: due) })
        return (probe, due)
    }

    @Test("a probe whose photo arrives from another peer ends: the next due entry becomes the probe")
    func arrivalEndsProbe() throws {
        var book = LackBook()
        let (probe, due) = try due(&book)
        book.arrived(probe)
        let next = photos.filter { $0 != probe && book.mayAsk($0, of: peer, now: due) }
        #expect(next.count == 1)
    }

    @Test("a probe abandoned (bytes that failed their check) ends the same way")
    func abandonEndsProbe() throws {
        var book = LackBook()
        let (probe, due) = try due(&book)
        book.abandonProbe(probe, by: peer)
        let next = photos.filter { $0 != probe && book.mayAsk($0, of: peer, now: due) }
        #expect(next.count == 1)
    }

    @Test("changes that could not be saved come out again")
    func remark() {
        var book = LackBook()
        book.lacked(photos[0], by: peer, now: start)
        let taken = book.takeChanges()
        book.remark(taken.map { LackBook.Key(peer: $0.peer, hash: $0.hash) })
        let again = book.takeChanges()
        #expect(again.map(\.hash) == [photos[0]])
    }

    /// A 32-byte id whose first bytes are `index`.
    static func id32(_ index: Int) -> Data {
        var bytes = [UInt8](repeating: 0, count: 32)
        withUnsafeBytes(of: UInt64(index).bigEndian) { bytes.replaceSubrange(0..<8, with: $0) }
        return Data(bytes)
    }
}
