import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Testing

/// The session's rules one at a time: rounds, CLOCK_SINCE, request skipping, the window, the queues and their
/// refusals, the gossip filter, gaps, and interest.
@Suite("Session machine: the rules")
struct SessionRulesTests {
    private let now = ContinuousClock.now
    private let a = Fixture.author(1)
    private let b = Fixture.author(2)

    @Test("our rounds: the first clock goes whole, the next only what changed, and whole again on CLOCK_UNKNOWN")
    func rounds() throws {
        var machine = Machine(peer: Fixture.peer)
        let first = VectorClock([a: 3, b: 5])
        let started = machine.startRound(ourClock: first)
        let (one, sent) = try #require(started)
        #expect(sent == [.send(.clock(round: one, first)), .rememberClock(sent: first, received: nil)])
        let second = VectorClock([a: 4, b: 5])
        let next = machine.startRound(ourClock: second)
        let (two, delta) = try #require(next)
        let digest = WireCodec.clockDigest(first)
        #expect(
            delta == [
                .send(.clockSince(round: two, base: digest, VectorClock([a: 4]))),
                .rememberClock(sent: second, received: nil),
            ]
        )
        #expect(
            machine.receive(.clockUnknown(round: two), now: now) == [
                .send(.clock(round: two, second)), .rememberClock(sent: second, received: nil),
            ]
        )
        // A round whose DONE came is over: CLOCK_UNKNOWN for it is refused.
        #expect(machine.receive(.done(round: one), now: now) == [.roundFinished(one), .checkGaps])
        #expect(machine.isFinished(round: one))
        #expect(machine.receive(.clockUnknown(round: one), now: now).first?.closeCode == .unexpectedMessage)
    }

    @Test("a clock that went backwards (a restored node) is sent whole, not as CLOCK_SINCE")
    func clockBackwards() throws {
        var machine = Machine(peer: Fixture.peer, lastSent: VectorClock([a: 9]))
        let started = machine.startRound(ourClock: VectorClock([a: 3]))
        let (round, actions) = try #require(started)
        #expect(actions.first == .send(.clock(round: round, VectorClock([a: 3]))))
    }

    @Test("the peer's CLOCK_SINCE on the base it last sent is answered as its whole clock; moved is reported")
    func clockSince() {
        let last = VectorClock([a: 2, b: 2])
        var machine = Machine(peer: Fixture.peer, lastReceived: last)
        let actions = machine.receive(
            .clockSince(round: 4, base: WireCodec.clockDigest(last), VectorClock([b: 7])),
            now: now
        )
        let whole = VectorClock([a: 2, b: 7])
        #expect(actions == [.rememberClock(sent: nil, received: whole), .peerClockKnown(moved: true), .startStreaming])
        #expect(machine.nextStreamJob() == .round(4, theirs: whole))
        #expect(machine.nextStreamJob() == nil)
        #expect(machine.peerClock == whole)
    }

    @Test("request skipping: the same question with nothing new here is answered with nothing")
    func requestSkipping() {
        var machine = Machine(peer: Fixture.peer)
        let theirs = VectorClock([a: 1])
        let ours = VectorClock([a: 3, b: 1])
        let ranges = [LogRange(author: a, range: 2...3), LogRange(author: b, range: 1...1)]
        #expect(machine.plan(round: 1, theirs: theirs, ours: ours) == .ranges(ranges))
        #expect(machine.plan(round: 2, theirs: theirs, ours: ours) == .nothing)
        #expect(machine.plan(round: 3, theirs: theirs, ours: VectorClock([a: 4, b: 1])) != .nothing)
    }

    @Test("the ACK window: at most `window` RECORDS frames unacknowledged; an ACK frees one")
    func window() {
        var configuration = Machine.Configuration()
        configuration.window = 2
        var machine = Machine(peer: Fixture.peer, configuration: configuration)
        for sequence in 1...2 {
            #expect(machine.recordsFrame([Fixture.outgoing(Fixture.record(1, UInt64(sequence)))], live: false) != nil)
        }
        #expect(!machine.windowOpen)
        #expect(machine.receive(.ack(VectorClock([a: 1])), now: now) == [.windowOpened])
        #expect(machine.windowOpen)
    }

    @Test("each record goes down the connection once: not again, not back to the peer that sent it")
    func sentOnce() {
        var machine = Machine(peer: Fixture.peer)
        let records = (1...3).map { Fixture.outgoing(Fixture.record(1, $0)) }
        let sent = machine.gossip(records, backlog: 0, highWater: 100)
        #expect(sent == [.send(.records(live: true, records.map(\.bytes)))])
        #expect(machine.gossip(records, backlog: 0, highWater: 100) == [])
        #expect(machine.push(records) == [])
        #expect(machine.recordsFrame(records, live: false) == nil)
        // A record the peer sent us is never sent back.
        let theirs = Fixture.record(5, 1)
        _ = machine.receive(.records(live: true, [theirs.bytes]), now: now)
        _ = machine.verified([theirs], delivery: .live, bytes: 32)
        _ = machine.stored(StoreOutcome(stored: 1, clock: VectorClock([theirs.ref.author: 1])))
        #expect(machine.gossip([Fixture.outgoing(theirs)], backlog: 0, highWater: 100) == [])
        // Out of order, beyond a gap, it is remembered on its own.
        let beyond = Fixture.record(6, 5)
        _ = machine.receive(.push([beyond.bytes]), now: now)
        _ = machine.verified([beyond], delivery: .push, bytes: 32)
        _ = machine.stored(StoreOutcome(stored: 1, clock: VectorClock()))
        #expect(machine.push([Fixture.outgoing(beyond)]) == [])
        #expect(machine.stats.pushesReceived == 1)
    }

    @Test("gossip is skipped while the peer is behind; once it has caught up, what it lacks is streamed to it")
    func gossipBacklog() {
        var machine = Machine(peer: Fixture.peer)
        let first = Fixture.outgoing(Fixture.record(1, 1))
        #expect(machine.gossip([first], backlog: 100, highWater: 100) == [])
        let second = Fixture.outgoing(Fixture.record(1, 2))
        // Not marked sent while skipped: the next gossip (or the round) still sends it.
        #expect(
            machine.gossip([first, second], backlog: 0, highWater: 100) == [
                .startStreaming, .send(.records(live: true, [first.bytes, second.bytes])),
            ]
        )
        #expect(machine.nextStreamJob() == .catchUp)
        #expect(machine.catchUpRanges(ours: VectorClock([a: 2])) == [LogRange(author: a, range: 1...2)])
    }

    @Test("a gap in live gossip is requested; not while the peer streams a round")
    func liveGaps() {
        var machine = Machine(peer: Fixture.peer)
        let fifth = Fixture.record(1, 5)
        _ = machine.receive(.records(live: true, [fifth.bytes]), now: now)
        _ = machine.verified([fifth], delivery: .live, bytes: 32)
        let actions = machine.stored(StoreOutcome(stored: 1, clock: VectorClock([a: 2])))
        #expect(actions.last == .send(.request([LogRange(author: a, range: 3...4)])))

        var streaming = Machine(peer: Fixture.peer)
        _ = streaming.receive(.offer(round: 1, records: 1, bytes: 32), now: now)
        _ = streaming.receive(.records(live: true, [fifth.bytes]), now: now)
        _ = streaming.verified([fifth], delivery: .live, bytes: 32)
        let quiet = streaming.stored(StoreOutcome(stored: 1, clock: VectorClock([a: 2])))
        #expect(!quiet.contains { if case .send(.request) = $0 { true } else { false } })
        #expect(quiet.contains(.progress(records: 0, ofRecords: 1, bytes: 0, ofBytes: 32)))
    }

    @Test("after the peer's DONE, what its clock covers and we lack is requested")
    func gapsAfterDone() {
        var machine = Machine(peer: Fixture.peer)
        _ = machine.receive(.clock(round: 1, VectorClock([a: 5, b: 2])), now: now)
        #expect(machine.receive(.done(round: 1), now: now) == [.roundFinished(1), .checkGaps])
        #expect(
            machine.checkGaps(ourClock: VectorClock([a: 3, b: 2])) == [
                .send(.request([LogRange(author: a, range: 4...5)]))
            ]
        )
        #expect(machine.checkGaps(ourClock: VectorClock([a: 5, b: 2])) == [])
    }

    @Test("records: a bad signature, a rule broken by the peer itself, a store failure end the session")
    func recordRefusals() {
        var bad = Machine(peer: Fixture.peer)
        _ = bad.receive(.records(live: true, [[1, 2]]), now: now)
        #expect(
            bad.verificationFailed("bad signature") == [.close(WireError(.badRecord, "invalid record: bad signature"))]
        )

        let own = TestRecord(
            ref: RecordRef(id: Fixture.record(900, 1).ref.id, author: Fixture.peer, sequence: 1),
            bytes: Fixture.record(900, 1).bytes
        )
        let third = Fixture.record(4, 1)
        var rules = Machine(peer: Fixture.peer)
        _ = rules.receive(.records(live: true, [third.bytes]), now: now)
        _ = rules.verified([third], delivery: .live, bytes: 32)
        // Someone else's rule-breaking record is kept without blame.
        let fine = rules.stored(StoreOutcome(stored: 1, brokeRules: [third.ref.id: "edit"], clock: VectorClock()))
        #expect(!fine.contains { $0.closeCode != nil })
        _ = rules.receive(.records(live: true, [own.bytes]), now: now)
        _ = rules.verified([own], delivery: .live, bytes: 32)
        let refused = rules.stored(
            StoreOutcome(stored: 1, brokeRules: [own.ref.id: "not the post's author"], clock: VectorClock())
        )
        #expect(
            refused.last
                == .close(WireError(.badRecord, "the peer signed a record that breaks a rule: not the post's author"))
        )
        #expect(refused.first == .send(.ack(VectorClock([Fixture.peer: 0]))), "stored, so acknowledged first")

        var failing = Machine(peer: Fixture.peer)
        _ = failing.receive(.records(live: true, [third.bytes]), now: now)
        _ = failing.verified([third], delivery: .live, bytes: 32)
        #expect(failing.storeFailed().first?.closeCode == .internal)
        #expect(failing.phase == .closed)
        #expect(failing.stored(StoreOutcome(stored: 1, clock: VectorClock())) == [])
    }

    @Test("queues: one more round or REQUEST than 16, or photo request than 256, is refused over budget")
    func queues() {
        var configuration = Machine.Configuration()
        configuration.maxQueuedStreams = 2
        configuration.maxQueuedServes = 2
        configuration.maxServers = 1
        var machine = Machine(peer: Fixture.peer, configuration: configuration)
        let request = WireMessage.request([LogRange(author: a, range: 1...1)])
        #expect(machine.receive(request, now: now) == [.startStreaming])
        #expect(machine.receive(request, now: now) == [])
        let refused = machine.receive(request, now: now)
        #expect(
            refused == [
                .close(WireError(.overBudget, "more than 2 rounds and requests from the peer wait to be answered"))
            ]
        )

        var serving = Machine(peer: Fixture.peer, configuration: configuration)
        #expect(serving.receive(.photoWant(Fixture.hash(1), offset: 0), now: now) == [.startServer])
        #expect(serving.receive(.thumbWant(Fixture.hash(2)), now: now) == [])
        // The worker takes one: room for one more.
        #expect(serving.nextServeJob() == .photo(Fixture.hash(1), from: 0))
        #expect(serving.receive(.thumbWant(Fixture.hash(3)), now: now) == [])
        #expect(serving.receive(.thumbWant(Fixture.hash(4)), now: now).first?.closeCode == .overBudget)
    }

    @Test(
        "interest: everything first (replacing), then only changes; nothing when nothing changed; old versions dropped"
    )
    func interest() {
        var machine = Machine(peer: Fixture.peer)
        let one = Fixture.post(1)
        let two = Fixture.post(2)
        #expect(
            machine.advertise([one: 0, two: 1], version: 1) == [
                .sendUrgent([
                    .interest(replace: true, [PostInterest(post: one, hops: 0), PostInterest(post: two, hops: 1)])
                ])
            ]
        )
        #expect(machine.advertise([one: 0, two: 1], version: 2) == [])
        #expect(
            machine.advertise([one: 0], version: 3) == [
                .sendUrgent([.interest(replace: false, [PostInterest(post: two, hops: nil)])])
            ]
        )
        #expect(machine.advertise([:], version: 2) == [], "older than the last one sent")
    }

    @Test("interest over 4,096 posts goes in several frames; only the first replaces")
    func interestFrames() throws {
        var machine = Machine(peer: Fixture.peer)
        let wanted = Dictionary(uniqueKeysWithValues: (0..<5000).map { (Fixture.post($0), UInt8(0)) })
        let actions = machine.advertise(wanted, version: 1)
        guard case .sendUrgent(let frames) = try #require(actions.first) else {
            Issue.record("not urgent: \(actions)")
            return
        }
        #expect(frames.count == 2)
        if case .interest(let replace, let entries) = frames[0] { #expect(replace && entries.count == 4096) }
        if case .interest(let replace, let entries) = frames[1] { #expect(!replace && entries.count == 904) }
    }
}
