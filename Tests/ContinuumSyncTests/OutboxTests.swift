import ContinuumCore
import ContinuumWire
import Foundation
import Testing

@testable import ContinuumSync

/// The queue of what waits to be written to one peer: never makes its senders wait, urgent first, room for bulk.
@Suite("Outbox: a peer that does not read holds up nobody")
struct OutboxTests {
    private static func chunk(_ size: Int) -> WireMessage {
        .photoData(AssetHash(unchecked: Data(count: 32)), offset: 0, chunk: [UInt8](repeating: 1, count: size))
    }

    @Test("urgent messages go ahead of those already waiting; the rest keep their order")
    func urgentFirst() async {
        let outbox = Outbox()
        #expect(outbox.enqueue(.ping(1)))
        #expect(outbox.enqueue(.ping(2)))
        #expect(outbox.enqueue(.pong(9), urgent: true))
        var written: [WireMessage] = []
        for _ in 0..<3 {
            guard let message = await outbox.next() else { break }
            written.append(message)
            outbox.wrote(message)
        }
        #expect(written == [.pong(9), .ping(1), .ping(2)])
        #expect(outbox.isDrained)
    }

    @Test("queuing never waits, even with nobody writing; past the cap it says so")
    func capWithoutWriter() {
        let outbox = Outbox()
        var accepted = 0
        // 256 KiB chunks with no writer: the first 32 MiB are taken at once, then the outbox refuses.
        for _ in 0..<200 {
            if outbox.enqueue(Self.chunk(256 * 1024)) { accepted += 1 } else { break }
        }
        #expect(accepted >= 120 && accepted < 200, "\(accepted)")
        #expect(outbox.backlog > Outbox.cap)
    }

    @Test("a bulk sender waits for room while the backlog is over the high water mark, and goes on once written")
    func bulkWaitsForRoom() async throws {
        let outbox = Outbox()
        for _ in 0..<12 { outbox.enqueue(Self.chunk(256 * 1024)) }
        #expect(outbox.backlog >= Outbox.highWater)
        let resumed = Task {
            await outbox.waitForRoom()
            return ContinuousClock.now
        }
        await Self.until { outbox.sendersWaitingForRoom == 1 }
        let beforeWriting = ContinuousClock.now
        while outbox.backlog >= Outbox.lowWater, let message = await outbox.next() { outbox.wrote(message) }
        let at = await resumed.value
        #expect(at >= beforeWriting, "the sender waited until the writer made room")
        #expect(outbox.sendersWaitingForRoom == 0)
    }

    @Test("a writer waiting for the next message gets the next one queued; finish ends it")
    func writerWakesAndFinishes() async throws {
        let outbox = Outbox()
        let writer = Task { () -> [WireMessage] in
            var got: [WireMessage] = []
            while let message = await outbox.next() {
                got.append(message)
                outbox.wrote(message)
            }
            return got
        }
        await Self.until { outbox.hasWaitingWriter }
        outbox.enqueue(.ping(7))
        await Self.until { outbox.hasWaitingWriter && outbox.isDrained }
        outbox.finish()
        #expect(await writer.value == [.ping(7)])
        #expect(!outbox.enqueue(.ping(8)), "a finished outbox takes nothing")
    }

    @Test("while corked the writer waits with messages queued; uncorked, it gets them all, urgent first, in order")
    func corkHoldsTheOpening() async throws {
        let outbox = Outbox(corked: true)
        let writer = Task { () -> [WireMessage] in
            guard let first = await outbox.next() else { return [] }
            return [first] + outbox.takeQueued(limit: 64 << 10)
        }
        await Self.until { outbox.hasWaitingWriter }
        #expect(outbox.enqueue(.ping(1)))
        #expect(outbox.enqueue(.ping(2)))
        #expect(outbox.enqueue(.pong(9), urgent: true))
        #expect(outbox.hasWaitingWriter, "the writer still waits: nothing is handed out while corked")
        #expect(outbox.backlog > 0, "nothing was taken while corked")
        outbox.uncork()
        #expect(await writer.value == [.pong(9), .ping(1), .ping(2)])
    }

    @Test("what is queued is taken in one go up to the limit, the rest stays for the next")
    func takeQueuedStopsAtTheLimit() async {
        let outbox = Outbox()
        for _ in 0..<5 { outbox.enqueue(Self.chunk(20 << 10)) }
        let first = await outbox.next()
        #expect(first != nil)
        // Each chunk counts 20 KiB + 80 bytes: two fit under 48 KiB, the third does not.
        let more = outbox.takeQueued(limit: 48 << 10)
        #expect(more.count == 2)
        #expect(outbox.takeQueued(limit: 1 << 20).count == 2)
        #expect(outbox.takeQueued(limit: 1 << 20).isEmpty)
    }

    @Test("a cancelled writer ends")
    func cancelledWriterEnds() async throws {
        let outbox = Outbox()
        let writer = Task { await outbox.next() }
        await Self.until { outbox.hasWaitingWriter }
        writer.cancel()
        #expect(await writer.value == nil)
    }

    /// Waits until `condition` holds, yielding to the other tasks between looks: the event, not a time.
    static func until(_ condition: () -> Bool) async {
        while !condition() { await Task.yield() }
    }
}
