import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Testing

/// Two machines wired back to back, each with an in-memory store, under a random schedule: random record sets
/// arriving out of order, local writes, gossip, rounds, slow stores, duplicated frames, dropped connections and
/// reconnects. Every case must end with the same records on both sides, and within one connection each record
/// crosses at most once per direction unless a frame was duplicated.
@Suite("Session machine: two machines back to back")
struct BackToBackTests {
    @Test("1,000 random cases converge; each record crosses at most once per direction")
    func randomCases() {
        var faults = 0
        for seed in 0..<1000 {
            var world = World(seed: UInt64(seed))
            world.run()
            faults += world.faults
            if let problem = world.problem {
                Issue.record("case \(seed): \(problem)")
                return
            }
            #expect(world.a.held == world.b.held, "case \(seed): the stores differ after healing")
            #expect(world.a.held == world.everything, "case \(seed): records are missing")
        }
        // The schedule did inject faults (the property covers them, not only the happy path).
        #expect(faults > 500)
    }
}

/// SplitMix64: a small seeded generator, so that a failing case can be run again by its number.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One node: its records, its machine, and what the machine asked for that has not happened yet.
struct Side {
    let name: String
    let author: Int
    private(set) var held: Set<TestRecord> = []
    var machine: Machine
    /// The clocks the store keeps between sessions.
    var keptSent: VectorClock?
    var keptReceived: VectorClock?
    /// Queued for the peer: urgent first.
    var urgent: [WireMessage] = []
    var normal: [WireMessage] = []
    var storing: StoreBatch<TestRecord>?
    var timers: [Int] = []
    /// The stream worker: its job's ranges still to send, and the round it answers.
    var worker: (ranges: [LogRange], round: UInt32?)?
    var workerActive = false
    var roundsWanted = 0
    var written: UInt64 = 0

    init(name: String, author: Int, peer: AuthorID) {
        self.name = name
        self.author = author
        machine = Self.machine(peer: peer, sent: nil, received: nil)
    }

    static func machine(peer: AuthorID, sent: VectorClock?, received: VectorClock?) -> Machine {
        var configuration = Machine.Configuration()
        configuration.window = 3
        configuration.flushRecords = 5
        return Machine(peer: peer, configuration: configuration, lastSent: sent, lastReceived: received)
    }

    /// The store's clock: per author, the contiguous prefix held.
    var clock: VectorClock { VectorClock(heads) }
    private var heads: [AuthorID: UInt64] = [:]
    private var logs: [AuthorID: [UInt64: TestRecord]] = [:]

    /// Stores a record; false when it was held already.
    mutating func insert(_ record: TestRecord) -> Bool {
        guard held.insert(record).inserted else { return false }
        let author = record.ref.author
        logs[author, default: [:]][record.ref.sequence] = record
        var head = heads[author] ?? 0
        while logs[author]?[head + 1] != nil { head += 1 }
        if head > 0 { heads[author] = head }
        return true
    }

    func records(of author: AuthorID, in range: ClosedRange<UInt64>, limit: Int) -> [TestRecord] {
        guard let log = logs[author] else { return [] }
        var records: [TestRecord] = []
        for sequence in range where records.count < limit {
            if let record = log[sequence] { records.append(record) }
        }
        return records
    }

    var hasWork: Bool {
        !urgent.isEmpty || !normal.isEmpty || storing != nil || !timers.isEmpty || workerActive || roundsWanted > 0
    }
}

/// The two sides, the connection between them, and the schedule.
struct World {
    var random: SeededGenerator
    /// a and b: modified in place through the array's subscript (a computed subscript would copy a side, and
    /// its sets, on every change).
    var sides: [Side]
    var a: Side { sides[0] }
    var b: Side { sides[1] }
    /// Records made elsewhere (third-party authors), still to arrive at a side.
    var arrivals: [(side: Int, record: TestRecord)] = []
    var everything: Set<TestRecord> = []
    /// Per connection, per direction (0: a to b), how often each record crossed.
    var crossings: [[RecordID: Int]] = [[:], [:]]
    var duplicatedThisConnection = false
    var now = ContinuousClock.now
    var faults = 0
    var problem: String?
    let faulty: Bool

    init(seed: UInt64) {
        random = SeededGenerator(state: seed)
        sides = [
            Side(name: "a", author: 1, peer: Fixture.author(2)), Side(name: "b", author: 2, peer: Fixture.author(1)),
        ]
        faulty = seed % 4 != 0
        // Third-party logs, each record reaching a, b or both, in a shuffled order.
        for author in 10..<(10 + Int.random(in: 1...3, using: &random)) {
            for sequence in 1...UInt64.random(in: 1...12, using: &random) {
                let record = Fixture.record(author, sequence)
                everything.insert(record)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: arrivals.append((0, record))
                case 1: arrivals.append((1, record))
                default: arrivals += [(0, record), (1, record)]
                }
            }
        }
        arrivals.shuffle(using: &random)
        sides[0].roundsWanted = 1
        sides[1].roundsWanted = 1
    }

    private var steps = 0

    mutating func run() {
        while steps < 3000, problem == nil {
            steps += 1
            if !randomStep() { break }
        }
        heal()
    }

    /// After the random part: rounds on the same connection until both hold the same (a new connection only when a
    /// frame was duplicated on this one: that is no longer TCP).
    mutating func heal() {
        if duplicatedThisConnection { reconnect() }
        // Rounds move only what a clock covers (records beyond a gap are not offered), so logs held in alternation
        // (1, 3, 5 here; 2, 4, 6 there) converge a record or two per round: allow a round per record.
        for _ in 0..<everything.count + 2 where problem == nil {
            sides[0].roundsWanted += 1
            sides[1].roundsWanted += 1
            var steps = 0
            while steps < 20_000, problem == nil, a.hasWork || b.hasWork {
                steps += 1
                quietStep()
            }
            if a.held == b.held { break }
        }
    }

    // MARK: The schedule

    private mutating func randomStep() -> Bool {
        var choices: [Int] = []
        if !arrivals.isEmpty { choices.append(0) }
        if a.written < 15 || b.written < 15 { choices.append(1) }
        if a.hasWork || b.hasWork { choices += [2, 2, 2, 2] }
        if faulty && steps < 300 { choices.append(3) }
        guard let choice = choices.randomElement(using: &random) else { return false }
        switch choice {
        case 0: arrive()
        case 1: write(Bool.random(using: &random) ? 0 : 1)
        case 2: quietStep()
        default: fault()
        }
        return true
    }

    /// One step of ordinary work: deliver a message, finish a store, fire a timer, run the worker, start a round.
    private mutating func quietStep() {
        var options: [(Int, Int)] = []
        for side in 0..<2 {
            let s = sides[side]  // read only
            if !s.urgent.isEmpty || !s.normal.isEmpty { options += [(side, 0), (side, 0)] }
            if s.storing != nil { options.append((side, 1)) }
            if !s.timers.isEmpty { options.append((side, 2)) }
            if s.workerActive { options.append((side, 3)) }
            if s.roundsWanted > 0 { options.append((side, 4)) }
        }
        guard let (side, kind) = options.randomElement(using: &random) else { return }
        now += .milliseconds(1)
        switch kind {
        case 0: deliver(from: side)
        case 1:
            let batch = sides[side].storing!
            sides[side].storing = nil
            finishStore(side, batch)
        case 2:
            let generation = sides[side].timers.removeFirst()
            // -1: the tree's repair timer (a HAVE's records not arrived by another path are pulled).
            perform(
                side,
                generation == -1
                    ? sides[side].machine.repair(ourClock: sides[side].clock, now: now + .seconds(1))
                    : sides[side].machine.flushTimerFired(generation)
            )
        case 3: workerStep(side)
        default:
            sides[side].roundsWanted -= 1
            if let (_, actions) = sides[side].machine.startRound(ourClock: sides[side].clock) { perform(side, actions) }
        }
    }

    private mutating func arrive() {
        let (side, record) = arrivals.removeFirst()
        storeLocally(side, [record])
    }

    private mutating func write(_ side: Int) {
        sides[side].written += 1
        let record = Fixture.record(sides[side].author, sides[side].written)
        everything.insert(record)
        storeLocally(side, [record])
    }

    /// Records that reached a side not through this session: stored, then gossiped (or pushed) to the peer.
    private mutating func storeLocally(_ side: Int, _ records: [TestRecord]) {
        let new = records.filter { sides[side].insert($0) }
        guard !new.isEmpty else { return }
        let outgoing = new.map(Fixture.outgoing)
        switch Int.random(in: 0..<6, using: &random) {
        case 0: perform(side, sides[side].machine.push(outgoing))
        // The peer is behind (its outbox over the high-water mark): gossip is skipped, a round catches up later.
        case 1: perform(side, sides[side].machine.gossip(outgoing, backlog: 1, highWater: 1))
        default: perform(side, sides[side].machine.gossip(outgoing, backlog: 0, highWater: 1))
        }
    }

    private mutating func fault() {
        faults += 1
        if Bool.random(using: &random) {
            reconnect()
            return
        }
        // A RECORDS or PUSH frame delivered twice.
        let side = Int.random(in: 0..<2, using: &random)
        if let frame = sides[side].normal.first(where: \.isRecords) {
            sides[side].normal.insert(frame, at: 0)
            duplicatedThisConnection = true
        }
    }

    /// The connection drops, with whatever was in flight; both sides reconnect with the clocks their stores kept
    /// and start a round.
    private mutating func reconnect() {
        for side in 0..<2 {
            let peer = sides[side].machine.peer
            sides[side].machine = Side.machine(
                peer: peer,
                sent: sides[side].keptSent,
                received: sides[side].keptReceived
            )
            sides[side].urgent = []
            sides[side].normal = []
            sides[side].storing = nil
            sides[side].timers = []
            sides[side].worker = nil
            sides[side].workerActive = false
            sides[side].roundsWanted = 1
        }
        crossings = [[:], [:]]
        duplicatedThisConnection = false
    }

    // MARK: Performing

    private mutating func deliver(from side: Int) {
        let message = sides[side].urgent.isEmpty ? sides[side].normal.removeFirst() : sides[side].urgent.removeFirst()
        let other = 1 - side
        if case .records(_, let batch) = message { count(batch, direction: side) }
        if case .push(let batch) = message { count(batch, direction: side) }
        perform(other, sides[other].machine.receive(message, now: now))
    }

    private mutating func count(_ batch: [[UInt8]], direction: Int) {
        for bytes in batch {
            guard let record = Fixture.decode(bytes) else { continue }
            crossings[direction][record.ref.id, default: 0] += 1
            if crossings[direction][record.ref.id]! > 1, !duplicatedThisConnection {
                problem = "\(record.ref.author.short):\(record.ref.sequence) crossed twice in direction \(direction)"
            }
        }
    }

    private mutating func finishStore(_ side: Int, _ batch: StoreBatch<TestRecord>) {
        let new = batch.records.filter { sides[side].insert($0) }
        var actions = sides[side].machine.stored(StoreOutcome(stored: new.count, clock: sides[side].clock))
        // What came from the peer is gossiped on, as the engine does: back to the same peer too (it must not go).
        actions += sides[side].machine.gossip(new.map(Fixture.outgoing), backlog: 0, highWater: 1)
        perform(side, actions)
    }

    private mutating func perform(_ side: Int, _ actions: [Machine.Action]) {
        var queue = actions[...]
        while let action = queue.popFirst(), problem == nil {
            let next = perform(side, action)
            queue = next[...] + queue
        }
    }

    private mutating func perform(_ side: Int, _ action: Machine.Action) -> [Machine.Action] {
        switch action {
        case .send(let message): sides[side].normal.append(message)
        case .sendUrgent(let messages): sides[side].urgent += messages
        case .verify(let batch, let delivery):
            let records = batch.compactMap(Fixture.decode)
            return sides[side].machine.verified(records, delivery: delivery, bytes: batch.count * 32)
        case .store(let batch):
            // Half the stores finish later, so that messages wait behind them.
            if Bool.random(using: &random) {
                sides[side].storing = batch
            } else {
                finishStore(side, batch)
            }
        case .scheduleFlush(let generation): sides[side].timers.append(generation)
        case .scheduleRepair: sides[side].timers.append(-1)
        case .checkGaps: return sides[side].machine.checkGaps(ourClock: sides[side].clock)
        case .rememberClock(let sent, let received):
            if let sent { sides[side].keptSent = sent }
            if let received { sides[side].keptReceived = received }
        case .startStreaming: sides[side].workerActive = true
        case .startServer: while sides[side].machine.nextServeJob() != nil {}
        case .close(let error), .peerRefused(let error): problem = "\(sides[side].name) closed: \(error)"
        case .peerClockKnown, .roundFinished, .progress, .storedFromPeer, .interest, .follows, .photo, .windowOpened:
            break
        }
        return []
    }

    /// The stream worker: takes a job, then sends one frame at a time under the window.
    private mutating func workerStep(_ side: Int) {
        guard let (ranges, round) = sides[side].worker else {
            guard let job = sides[side].machine.nextStreamJob() else {
                sides[side].workerActive = false
                return
            }
            switch job {
            case .request(let ranges): sides[side].worker = (ranges, nil)
            case .catchUp: sides[side].worker = (sides[side].machine.catchUpRanges(ours: sides[side].clock), nil)
            case .round(let number, let theirs):
                switch sides[side].machine.plan(round: number, theirs: theirs, ours: sides[side].clock) {
                case .nothing:
                    sides[side].normal += [.offer(round: number, records: 0, bytes: 0), .done(round: number)]
                case .ranges(let ranges):
                    sides[side].normal.append(.offer(round: number, records: 0, bytes: 0))
                    sides[side].worker = (ranges, number)
                }
            }
            return
        }
        guard let range = ranges.first else {
            if let round { sides[side].normal.append(.done(round: round)) }
            sides[side].worker = nil
            return
        }
        guard sides[side].machine.windowOpen else { return }
        let records = sides[side].records(of: range.author, in: range.range, limit: 4)
        var rest = Array(ranges.dropFirst())
        if let last = records.last, last.ref.sequence < range.range.upperBound {
            rest.insert(LogRange(author: range.author, range: (last.ref.sequence + 1)...range.range.upperBound), at: 0)
        }
        if let frame = sides[side].machine.recordsFrame(records.map(Fixture.outgoing), live: false) {
            sides[side].normal.append(frame)
        }
        sides[side].worker = (rest, round)
    }

}
