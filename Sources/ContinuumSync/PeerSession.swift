import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Logging
import NIOConcurrencyHelpers

/// One authenticated session with one peer: the executor of its ``SessionMachine``. The machine decides; this actor
/// feeds it what arrives and performs what it asks: queuing messages in ``outbox`` (which one writer task drains
/// into the socket, and where queuing never waits), verifying and storing records, reading the clock, telling the
/// engine and the photo fetcher, and running the workers that answer the peer's rounds and serve its photos.
actor PeerSession {
    typealias Machine = SessionMachine<VerifiedRecord>

    let peer: AuthorID
    let hello: Hello
    let initiator: Bool
    /// Why the session is kept whatever the overlay's bound, if it is: a `--peer HOST:PORT` connection (for as long
    /// as it lasts), or one on which a join was completed (until the first exchange is complete both ways).
    let pin: AdmissionRules.Pin
    /// Whether the first anti-entropy exchange with the peer is complete both ways (``AdmissionRules/caughtUp``):
    /// set once by this actor, read by the engine without waiting for it.
    private nonisolated let caughtUp = NIOLockedValueBox(false)
    /// Progress of the first exchange, until it is complete: the peer's DONE of one of our rounds came; our DONE
    /// of one of its rounds was queued.
    private var ourRoundFinished = false
    private var theirRoundAnswered = false
    let host: String
    /// Corked until the opening (the first INTEREST and the first round's clock) is queued, so that it leaves in
    /// one TLS record; an ERROR uncorks it too.
    nonisolated let outbox = Outbox(corked: true)
    /// Tells this session from another with the same peer.
    nonisolated let token = UUID()
    let engine: SyncEngine
    /// The groups shared with the peer; ``store`` shows only their logs and photos.
    let scope: SessionScope
    let store: any SessionStorage
    let configuration: SyncConfiguration
    let logger: Logger
    var machine: Machine
    /// Closes the TCP connection (when the engine ends this session, for example for a duplicate).
    private let closeConnection: @Sendable () -> Void
    private(set) var closed = false
    private(set) var lastReceived = ContinuousClock.now
    /// Background work of this session (workers, timers), removed as each finishes.
    private var tasks: [UUID: Task<Void, Never>] = [:]
    /// Waiting for an ACK to free the RECORDS window; for the peer's DONE of our rounds; for the machine to be idle.
    private var windowWaiters: [CheckedContinuation<Void, Never>] = []
    var roundWaiters: [UInt32: [UUID: CheckedContinuation<Bool, Never>]] = [:]
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// The ERROR this side closed the session with from outside its read loop (a store's outcome, a timer's): the
    /// reason the connection closed, although the loop only sees it end.
    private(set) var refusal: WireError?
    /// Asking again for records held back is under way, and more were held back meanwhile (``askAgain()``).
    var askingAgain = (running: false, again: false)
    /// Where the records held back since they were last asked for again are, in their logs (``membersChanged()``).
    var heldPositions = HeldPositions()

    /// `clocks`: those last exchanged with the peer, as the store kept them (``loadClocks(of:store:logger:)``).
    init(
        peer: AuthorID,
        hello: Hello,
        initiator: Bool,
        pin: AdmissionRules.Pin = .none,
        host: String,
        engine: SyncEngine,
        scope: SessionScope,
        clocks: (sent: VectorClock?, received: VectorClock?),
        logger: Logger,
        closeConnection: @escaping @Sendable () -> Void = {}
    ) {
        self.peer = peer
        self.hello = hello
        self.initiator = initiator
        self.pin = pin
        self.host = host
        self.engine = engine
        self.scope = scope
        self.store = ScopedStorage(base: engine.store, scope: scope)
        self.configuration = engine.configuration
        self.closeConnection = closeConnection
        machine = Machine(
            peer: peer,
            configuration: engine.configuration.session,
            lastSent: clocks.sent,
            lastReceived: clocks.received
        )
        var logger = logger
        logger[metadataKey: "peer.id"] = "\(peer.short)"
        self.logger = logger
    }

    // MARK: Inputs

    /// A message from the peer. Returns once it has been acted on (a message that waits for what is under way holds
    /// up the next read, but a store does not: the next frame of records is read and verified beside it, as the
    /// machine allows); throws the ERROR that ends the session, or ``PeerReportedError``.
    func receive(_ message: WireMessage) async throws {
        lastReceived = .now
        // A costly message (10 ms of work or more, by its budget) lets the other sessions' work go first: what they
        // have waiting is not held up behind it. Its own biggest pieces (encoding a clock, working out what the
        // peer lacks) run off the cooperative pool (``offThePool(_:)``).
        if PeerBudget.cost(of: message) >= 100 { await Task.yield() }
        try await run(machine.receive(message, now: lastReceived))
        if pin == .join { checkCaughtUp() }
        while machine.isBusy, !machine.readsBesideStore, !closed {
            await withCheckedContinuation { idleWaiters.append($0) }
        }
    }

    /// Returns once what the peer sent has been verified and stored (the peer closed the connection: what it sent
    /// is stored all the same), or the session has closed.
    func finishIntake() async {
        while machine.isBusy, !closed { await withCheckedContinuation { idleWaiters.append($0) } }
    }

    // MARK: The bound

    /// Whether the session is kept whatever the overlay's bound, and not counted in it, now: a `--peer HOST:PORT`
    /// connection always; one on which a join was completed until the first exchange is complete both ways.
    nonisolated var pinned: Bool {
        AdmissionRules.pinned(pin, caughtUp: caughtUp.withLockedValue { $0 })
    }

    /// Our DONE of one of the peer's rounds was queued: the peer has been sent what it lacked.
    func answeredTheirRound() {
        theirRoundAnswered = true
        if pin == .join { checkCaughtUp() }
    }

    /// Notes that the first exchange is complete both ways, once it is: a join's session then counts in the bound
    /// (the overlay ends it, like any session with a non-neighbour, when the node is over its bound).
    private func checkCaughtUp() {
        guard !closed, !caughtUp.withLockedValue({ $0 }),
            AdmissionRules.caughtUp(
                ourRoundFinished: ourRoundFinished,
                theirRoundAnswered: theirRoundAnswered,
                unacknowledged: machine.inflight
            )
        else { return }
        caughtUp.withLockedValue { $0 = true }
        logger.info("the joiner holds the group's history: the join's session counts in the overlay's bound now")
    }

    // MARK: Performing actions

    /// Performs `actions` in order; an action's own results (a verification's, a store's) are performed before
    /// the actions after it. Throws the ERROR the machine closes with, or the peer's.
    func run(_ actions: [Machine.Action]) async throws {
        var queue = actions[...]
        while let action = queue.popFirst() {
            let next = try await perform(action)
            if !next.isEmpty { queue = next[...] + queue }
        }
        if !machine.isBusy || machine.readsBesideStore || closed {
            for waiter in idleWaiters { waiter.resume() }
            idleWaiters.removeAll()
        }
    }

    /// Performs actions that did not come from a message read by the session's loop: an ERROR they end with is
    /// sent from here.
    func runDetached(_ actions: [Machine.Action]) async {
        do {
            try await run(actions)
        } catch let error as WireError {
            logger.notice("closing the session", metadata: ["reason": "\(error)"])
            await close(reporting: error)
        } catch {
            close()
        }
    }

    private func perform(_ action: Machine.Action) async throws -> [Machine.Action] {
        switch action {
        case .send(let message): send(message)
        case .sendUrgent(let messages): sendUrgentLogged(messages)
        case .verify(let batch, let delivery): return await verify(batch, delivery)
        case .store(let batch) where batch.parts.contains { $0.delivery != .catchUp }:
            // Live records and pushes are stored in line: a relayed record takes no hop between tasks.
            return await storeBatch(batch)
        case .store(let batch):
            // A round's batch in the background: the session reads and verifies the peer's next frames meanwhile, as
            // the machine allows (``SessionMachine/readsBesideStore``); the store's results are performed when done.
            spawn { session in await session.runDetached(await session.storeBatch(batch)) }
        case .scheduleFlush(let generation):
            spawn { session in
                // Cancelled only when the session closes: nothing is left to store then.
                try? await Task.sleep(for: .milliseconds(30))
                await session.flushTimerFired(generation)
            }
        case .scheduleRepair(let delay):
            spawn { session in
                try? await Task.sleep(for: delay)
                await session.repairTimerFired()
            }
        case .checkGaps:
            do { return machine.checkGaps(ourClock: try await store.clock()) } catch {
                logger.failure("reading this node's clock failed", error)
                return machine.failed(while: "reading its clock")
            }
        case .rememberClock(let sent, let received): await rememberClock(sent: sent, received: received)
        case .peerClockKnown, .roundFinished, .progress, .storedFromPeer: await tell(action)
        case .interest(let replace, let entries): return await receivedInterest(replace: replace, entries)
        case .follows(let entries): await engine.receivedFollows(entries, from: peer)
        case .photo(let message):
            if let error = await engine.photos.handle(message, from: peer) { return machine.refuse(error) }
        case .startStreaming: spawn { session in await session.runStreams() }
        case .startServer: spawn { session in await session.runServes() }
        case .windowOpened: if !windowWaiters.isEmpty { windowWaiters.removeFirst().resume() }
        case .close(let error):
            let why = error.code == .overBudget ? "the peer is over its budget" : "refusing the peer"
            logger.notice("\(why); disconnecting it", metadata: ["error": "\(error.message)"])
            throw error
        case .peerRefused(let error):
            logger.notice("peer reported an error", metadata: ["error": "\(error)"])
            throw PeerReportedError(error: error)
        }
        return []
    }

    /// Tells the engine and the photo fetcher what the machine learnt: the peer's clock, a round's end, a round's
    /// progress, records newly stored.
    private func tell(_ action: Machine.Action) async {
        switch action {
        case .peerClockKnown(let moved): await engine.photos.peerClockKnown(peer, moved: moved)
        case .roundFinished(let number):
            ourRoundFinished = true
            if pin == .join { checkCaughtUp() }
            for waiter in (roundWaiters.removeValue(forKey: number) ?? [:]).values { waiter.resume(returning: true) }
            await engine.emit(.roundFinished(with: peer, round: number))
        case .progress(let records, let ofRecords, let bytes, let ofBytes):
            await engine.emit(
                .progress(from: peer, records: records, ofRecords: ofRecords, bytes: bytes, ofBytes: ofBytes)
            )
        case .storedFromPeer(let count): await engine.didStore(from: self, count: count)
        default: preconditionFailure("\(action) is not news for the engine")
        }
    }

    /// The peer's INTEREST, for the engine: only posts of the groups the session shares.
    private func receivedInterest(replace: Bool, _ entries: [PostInterest]) async -> [Machine.Action] {
        do {
            let entries = try await sharedInterest(entries)
            try await engine.receivedInterest(from: peer, replace: replace, entries)
        } catch let error as WireError {
            return machine.refuse(error)
        } catch {
            logger.failure("reading the groups of the posts the peer follows failed", error)
            return machine.failed(while: "reading the groups of posts")
        }
        return []
    }

    /// INTEREST may name only posts of the groups the session shares: entries for a held post of another group are
    /// dropped (and logged), the rest kept. (A relay may pass on interest in a post it does not hold; the peer's view of
    /// the groups may differ from this node's for a while.)
    private func sharedInterest(_ entries: [PostInterest]) async throws -> [PostInterest] {
        let wanted = entries.filter { $0.hops != nil }.map(\.post)
        guard !wanted.isEmpty else { return entries }
        let shared = scope.groups
        let outside = Set(try await store.groups(ofPosts: wanted).filter { !shared.contains($0.value) }.keys)
        guard !outside.isEmpty else { return entries }
        logger.notice(
            "interest in posts of a group this session does not share was ignored",
            metadata: ["posts": "\(outside.count)", "first": "\(outside.sorted().first!.short)"]
        )
        return entries.filter { !outside.contains($0.post) }
    }

    // MARK: Queuing and closing

    /// Queues a message without waiting; a peer that has let more than ``Outbox/cap`` bytes pile up is not
    /// reading, and its session ends.
    func send(_ message: WireMessage) {
        if !outbox.enqueue(message) { overflowed() }
    }

    /// Queues messages ahead of everything that waits, logging a change of the link in the broadcast tree.
    private func sendUrgentLogged(_ messages: [WireMessage]) {
        if let tree = messages.first(where: { if case .tree = $0 { true } else { false } }) {
            logger.info(
                tree == .tree(eager: false)
                    ? "tree push: pruned the link (a live frame brought only records held already)"
                    : "tree push: grafted the link (a record announced did not come by another path)"
            )
        }
        sendUrgent(messages)
    }

    private func sendUrgent(_ messages: [WireMessage]) {
        for message in messages where !outbox.enqueue(message, urgent: true) {
            overflowed()
            return
        }
    }

    private func overflowed() {
        guard !closed else { return }
        logger.notice("the peer does not read what it is sent; closing the session")
        spawn { session in
            await session.close(
                reporting: WireError(.timeout, "the peer has not read the last \(Outbox.cap >> 20) MiB sent to it")
            )
        }
    }

    /// Tells the peer why (an ERROR, ahead of anything still queued), then ends the session.
    func close(reporting error: WireError) async {
        guard !closed else { return }
        refusal = error
        machine.close()
        outbox.enqueue(.error(error), urgent: true)
        outbox.uncork()
        // The writer sends it next; wait at most a second for that (a peer that does not read never gets it, and
        // the close below ends the session anyway). Polled: the outbox has no "written" event, and this runs once
        // per session at most.
        let deadline = ContinuousClock.now + .seconds(1)
        while !outbox.isDrained, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        close()
    }

    /// Ends the session's background work and its connection.
    func close() {
        closed = true
        machine.close()
        for task in tasks.values { task.cancel() }
        tasks.removeAll()
        for waiter in windowWaiters + idleWaiters { waiter.resume() }
        windowWaiters.removeAll()
        idleWaiters.removeAll()
        for (_, waiters) in roundWaiters { for waiter in waiters.values { waiter.resume(returning: false) } }
        roundWaiters.removeAll()
        outbox.finish()
        closeConnection()
    }

    /// Runs `work` in the background until it finishes or the session closes.
    func spawn(_ work: @escaping @Sendable (PeerSession) async -> Void) {
        guard !closed else { return }
        let id = UUID()
        tasks[id] = Task {
            await work(self)
            self.finished(id)
        }
    }

    private func finished(_ id: UUID) { tasks[id] = nil }

    func waitForWindow() async {
        while !machine.windowOpen, !Task.isCancelled, !closed {
            await withCheckedContinuation { windowWaiters.append($0) }
        }
    }
}

/// An ERROR frame received from the peer: the session ends without answering it.
struct PeerReportedError: Error {
    let error: WireError
}
