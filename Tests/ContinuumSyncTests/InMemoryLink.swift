import ContinuumCore
import ContinuumWire
import Logging
import NIOConcurrencyHelpers

@testable import ContinuumSync

/// Two sync engines joined in memory, as ``SyncNetwork`` joins two nodes once their handshake has settled the groups
/// they share: no socket, no TLS, no handshake.
///
/// What production does after the handshake, and what stands for it here:
/// - each side makes a ``PeerSession`` with the membership view of now, a ``SessionScope`` of the groups settled
///   and the clocks last exchanged with the peer, and registers it with its engine (a refusal ends the link);
/// - each side's opening: what it wants pushed (INTEREST), then the first anti-entropy round, then the outbox is
///   uncorked;
/// - one task per direction stands for a side's writer task and the other side's read loop together: it takes what
///   the outbox holds (``Outbox/next()`` waits for it, no timer) and hands each message to the other session's
///   ``PeerSession/receive(_:)``, in order;
/// - a session that ends finishes its outbox, which is what a closed connection is here: the task of that direction
///   ends, and the other side ends its session as "closed by the peer". An ERROR thrown while receiving goes to the
///   peer ahead of the close, as production writes it.
///
/// Every message delivered is kept, per receiving engine, for the tests to see what crossed the link, and told once
/// the session has acted on it (``deliveries(to:)``), for the tests to wait for a message no engine event follows.
final class InMemoryLink: Sendable {
    /// One end of the link: an engine and its session with the node at the other end.
    struct End: Sendable {
        let engine: SyncEngine
        let session: PeerSession
    }

    /// The side that dialled.
    let dialler: End
    /// The side that was dialled.
    let listener: End
    /// What crossed the link toward one engine: every message handed to it, in order, and each once acted on.
    private final class Tap: Sendable {
        let handed = NIOLockedValueBox<[WireMessage]>([])
        let acted: (stream: AsyncStream<WireMessage>, continuation: AsyncStream<WireMessage>.Continuation)
        init() { acted = AsyncStream.makeStream() }
    }

    /// The two directions' tasks.
    private let tasks = NIOLockedValueBox<[Task<Void, Never>]>([])
    /// The two openings, each ending with the number of its first round (nil: none started).
    private let openings = NIOLockedValueBox<[(End, Task<UInt32?, Never>)]>([])
    /// What the dialler, and the listener, were handed.
    private let toDialler = Tap()
    private let toListener = Tap()

    private init(dialler: End, listener: End) {
        self.dialler = dialler
        self.listener = listener
    }

    private func tap(_ engine: SyncEngine) -> Tap { engine === dialler.engine ? toDialler : toListener }

    /// The sessions' logger unless told otherwise: notices and worse.
    static let quiet: Logger = {
        var logger = Logger(label: "in-memory-link")
        logger.logLevel = .notice
        return logger
    }()

    /// Joins `dialler` to `listener` with the groups their handshake would have settled, and starts both sessions;
    /// `pins`: why each side keeps its session whatever the overlay's bound (a join completed in the handshake, an
    /// address kept connected), if it does. Throws the ERROR with which an engine refused its session.
    static func connect(
        _ dialler: SyncEngine,
        to listener: SyncEngine,
        sharing groups: Set<GroupID>,
        pins: (dialler: AdmissionRules.Pin, listener: AdmissionRules.Pin) = (.none, .none),
        logger: Logger = quiet
    ) async throws -> InMemoryLink {
        let ours = try await session(
            on: dialler,
            with: listener,
            initiator: true,
            pin: pins.dialler,
            groups: groups,
            logger: logger
        )
        let theirs = try await session(
            on: listener,
            with: dialler,
            initiator: false,
            pin: pins.listener,
            groups: groups,
            logger: logger
        )
        if let refusal = await dialler.register(ours) { throw refusal }
        if let refusal = await listener.register(theirs) {
            await dialler.unregister(ours, reason: "the peer refused: \(refusal.code)")
            throw refusal
        }
        let link = InMemoryLink(
            dialler: End(engine: dialler, session: ours),
            listener: End(engine: listener, session: theirs)
        )
        link.start()
        return link
    }

    /// The session `engine` makes for `peer` after the handshake (``SyncNetwork``'s `serveSession`).
    private static func session(
        on engine: SyncEngine,
        with peer: SyncEngine,
        initiator: Bool,
        pin: AdmissionRules.Pin,
        groups: Set<GroupID>,
        logger: Logger
    ) async throws -> PeerSession {
        let theirs = await peer.hello
        let peerNode = await peer.identity.node
        let store = await engine.store
        return PeerSession(
            peer: theirs.node,
            hello: theirs,
            initiator: initiator,
            pin: pin,
            host: "in-memory",
            engine: engine,
            scope: SessionScope(peer: peerNode, groups: groups, view: try await engine.currentMembership()),
            clocks: await PeerSession.loadClocks(of: theirs.node, store: store, logger: logger),
            logger: logger
        )
    }

    private func start() {
        let (dialler, listener, toDialler, toListener) = (dialler, listener, toDialler, toListener)
        let started = [
            Task { await Self.pump(from: dialler, to: listener, tap: toListener) },
            Task { await Self.pump(from: listener, to: dialler, tap: toDialler) },
        ]
        tasks.withLockedValue { $0 = started }
        let opening = [dialler, listener].map { end in (end, Task { await Self.open(end) }) }
        openings.withLockedValue { $0 = opening }
    }

    /// Each message delivered to `engine` from now on, once its session has acted on it; one reader at a time. Ends
    /// when the link is closed.
    func deliveries(to engine: SyncEngine) -> AsyncStream<WireMessage> {
        tap(engine).acted.stream
    }

    /// A session's opening, as ``SyncNetwork`` queues it: INTEREST, the first round, then the outbox uncorked.
    /// Returns the round's number.
    private static func open(_ end: End) async -> UInt32? {
        let (wanted, version) = await end.engine.advertisement(for: end.session.peer)
        await end.session.advertise(wanted, version: version)
        let round = await end.session.startRound(uncorking: true)
        end.session.outbox.uncork()
        return round
    }

    /// Waits until both sides' first rounds are done: each peer has sent what the other lacked, and it is stored.
    /// False when a round did not start or the session ended first (or after `timeout`).
    func opened(timeout: Duration = .seconds(90)) async -> Bool {
        for (end, opening) in openings.withLockedValue({ $0 }) {
            guard let round = await opening.value, await end.session.waitForRound(round, timeout: timeout) else {
                return false
            }
        }
        return true
    }

    /// One direction: what `from` queues goes to `to`, in order, until `from`'s outbox is finished; then `to`'s
    /// session ends too.
    private static func pump(from: End, to: End, tap: Tap) async {
        var reason = "closed by the peer"
        do {
            while let first = await from.session.outbox.next() {
                for message in [first] + from.session.outbox.takeQueued(limit: 64 << 10) {
                    from.session.outbox.wrote(message)
                    tap.handed.withLockedValue { $0.append(message) }
                    try await to.session.receive(message)
                    tap.acted.continuation.yield(message)
                }
            }
            // As production's read loop: what the peer sent is stored before the session ends, and an ERROR this
            // side closed with from outside the loop (a store's outcome) is the reason.
            await to.session.finishIntake()
            if let refusal = await to.session.refusal { reason = "\(refusal.code): \(refusal.message)" }
        } catch let error as PeerReportedError {
            reason = "the peer refused: \(error.error.code): \(error.error.message)"
        } catch let error as WireError {
            // The ERROR goes to the peer ahead of the close (the other direction delivers it).
            await to.session.close(reporting: error)
            reason = "\(error.code): \(error.message)"
        } catch {
            reason = "\(error)"
        }
        await to.engine.unregister(to.session, reason: reason)
    }

    /// The messages `engine` was handed so far, in order.
    func messages(receivedBy engine: SyncEngine) -> [WireMessage] {
        tap(engine).handed.withLockedValue { $0 }
    }

    /// The record bytes in the RECORDS frames (`live` or not; nil: both) and PUSH frames (`push`) `engine` was
    /// handed.
    func records(receivedBy engine: SyncEngine, live: Bool? = nil, push: Bool = true) -> [[UInt8]] {
        messages(receivedBy: engine).flatMap { message -> [[UInt8]] in
            switch message {
            case .records(let isLive, let records) where live == nil || live == isLive: records
            case .push(let records) where push: records
            default: []
            }
        }
    }

    /// Ends the dialler's session, which ends the listener's ("closed by the peer"), and waits for both directions
    /// and both openings to end.
    func close() async {
        await dialler.engine.unregister(dialler.session, reason: "closed by the test")
        for task in tasks.withLockedValue({ $0 }) { await task.value }
        for (_, opening) in openings.withLockedValue({ $0 }) { _ = await opening.value }
        for tap in [toDialler, toListener] { tap.acted.continuation.finish() }
    }
}
