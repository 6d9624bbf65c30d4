import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation

/// What the ``OverlayDialer`` decides, as a value: which peers it knows and can dial, which it dials now, when it dials
/// each again after a failure, which it suspects gone, and which sessions it ends to make room for a neighbour. Each
/// event is a mutating method; the time (`now`) and the jitter are inputs, so the same events give the same plan.
/// The dialler performs what the plan says (the network, the engine, the log, the waits).
struct DialPlan: Sendable {
    /// The spread that keeps a crowd's retries from all coming at once: a factor in 0.75…1.25 for back-offs, and a
    /// short wait of 100…500 ms for "look again soon".
    struct Jitter: Sendable {
        /// A factor in 0.75…1.25 that a back-off is multiplied by.
        var factor: @Sendable () -> Double
        /// A short wait in 100…500 ms.
        var soon: @Sendable () -> Duration

        /// The jitter a node uses: drawn from the system's random numbers.
        static let random = Jitter(
            factor: { Double.random(in: 0.75...1.25) },
            soon: { .milliseconds(Int.random(in: 100...500)) }
        )
    }

    /// The dials to make and the sessions to end that ``reconcile(everyone:overlay:now:)`` decided.
    struct Reconciliation: Sendable, Hashable {
        /// Peers to dial now, in ascending order of id; they count as being dialled until ``stopDialling(_:)``.
        var dial: [AuthorID]
        /// Sessions to end so that neighbours fit in the bound, the farthest on the ring first.
        var end: [AuthorID]
    }

    /// Failures in a row before a peer may be suspected gone.
    static let suspectAfter = 3
    /// A peer is suspected only once dialling it has failed for this long, too: a node that is still starting (a
    /// crowd started together) is not taken off the ring by everyone at once.
    static let suspectAfterTime: Duration = .seconds(10)
    /// How often a suspect is dialled again (a restarted node, a healed partition), before jitter.
    static let probeInterval: Duration = .seconds(20)
    /// How long a peer that answered busy waits, before jitter.
    static let busyRetry: Duration = .seconds(30)
    /// A session that lasted longer than this with the peer that answered is no failure: it is dialled again soon.
    static let longSession: Duration = .seconds(10)

    /// The overlay's view: the peers known, the suspects, the neighbours.
    private(set) var view: PeerView
    /// Peers with an address to dial (discovery, memory, configuration).
    private(set) var addressed: Set<AuthorID> = []
    /// Peers known other than by discovery (memory, configuration): discovery's removal does not remove them.
    private(set) var pinned: Set<AuthorID> = []
    /// Peers being dialled now (from ``reconcile(everyone:overlay:now:)`` until ``stopDialling(_:)``).
    private(set) var dialling: Set<AuthorID> = []
    /// When each peer may be dialled again; a peer without an entry may be dialled at once.
    private(set) var retryAt: [AuthorID: ContinuousClock.Instant] = [:]
    /// Failed dials in a row, per peer.
    private(set) var failures: [AuthorID: Int] = [:]
    /// When dialling each failing peer first failed (in this run of failures).
    private(set) var failingSince: [AuthorID: ContinuousClock.Instant] = [:]
    private let jitter: Jitter

    /// An empty plan for the node `own`, keeping at most `maxPeers` sessions (0: a full mesh).
    init(own: AuthorID, maxPeers: Int, jitter: Jitter = .random) {
        view = PeerView(own: own, maxPeers: maxPeers)
        self.jitter = jitter
    }

    /// A peer known from memory or configuration: in the view, and kept when discovery no longer shows it. False for
    /// this node itself (nothing changes).
    mutating func pin(_ peer: AuthorID) -> Bool {
        guard peer != view.own else { return false }
        addressed.insert(peer)
        pinned.insert(peer)
        view.add(peer)
        return true
    }

    /// Discovery found `peer`: in the view, with its failures and its wait forgotten (its address may be new). False
    /// for this node itself (nothing changes).
    mutating func found(_ peer: AuthorID) -> Bool {
        guard peer != view.own else { return false }
        addressed.insert(peer)
        view.add(peer)
        failures[peer] = nil
        failingSince[peer] = nil
        retryAt[peer] = nil
        return true
    }

    /// Discovery found `peer` announcing protocol `version` (its TXT record's `proto`). At this node's version or a
    /// later one (which answers at this node's, PROTOCOL.md §7.4.1), as ``found(_:)``. At an earlier one, it is not
    /// dialled, since each side would refuse the other's HELLO (§7.8.13): out of the view unless pinned, as if
    /// discovery no longer showed it. True when the view changed.
    mutating func found(_ peer: AuthorID, speaking version: UInt16) -> Bool {
        guard version >= WireLimits.protocolVersion else { return view.known.contains(peer) && removed(peer) }
        return found(peer)
    }

    /// Discovery no longer shows `peer`: out of the view, unless it is pinned. True when the view changed.
    mutating func removed(_ peer: AuthorID) -> Bool {
        guard !pinned.contains(peer) else { return false }
        view.remove(peer)
        return true
    }

    /// A session with `peer` is up (either side dialled): it is alive, so its failures are forgotten and it is on the
    /// ring again. True when it was a suspect (the view changed).
    mutating func seen(_ peer: AuthorID) -> Bool {
        guard addressed.contains(peer) else { return false }
        failures[peer] = nil
        failingSince[peer] = nil
        guard view.suspects.contains(peer) else { return false }
        view.add(peer)
        return true
    }

    /// The peers to dial and the sessions to end, with `everyone` the peers that have a session and `overlay` those
    /// of them that count in the bound. The peers to dial are marked as being dialled.
    ///
    /// A peer is dialled when it is a neighbour or a suspect (probed now and then: a node restarted, a partition
    /// healed), has an address, its wait is over, and it has no session and no dial under way. Room is made only for
    /// neighbours that answered their last dial (ending a working session for one that keeps failing would help no
    /// one), and not for one with a session outside the bound already (`--peer HOST:PORT`).
    mutating func reconcile(
        everyone: Set<AuthorID>,
        overlay: Set<AuthorID>,
        now: ContinuousClock.Instant
    ) -> Reconciliation {
        let dialable = Set(view.known.filter { addressed.contains($0) && (retryAt[$0].map { $0 <= now } ?? true) })
        let wanted = dialable.filter { failures[$0] == nil && !everyone.contains($0) }
        let end = view.excess(connected: overlay, dialable: wanted)
        let targets = view.neighbours.union(view.suspects)
        let dial = targets.sorted().filter {
            !everyone.contains($0) && !dialling.contains($0) && dialable.contains($0)
        }
        dialling.formUnion(dial)
        return Reconciliation(dial: dial, end: end)
    }

    /// Whether a dial of `peer` first waits for the peer's own dial: a peer with a smaller id most likely dials this
    /// node too, so that usually one connection is made, not two. Not after a failure (it did not dial, then).
    func waitsForTheirDial(_ peer: AuthorID) -> Bool {
        view.own > peer && failures[peer] == nil
    }

    /// The dial of `peer` is over (its session ended, or it was not made).
    mutating func stopDialling(_ peer: AuthorID) {
        dialling.remove(peer)
    }

    /// The peer's own session won the tie (or replaced this node's): nothing failed.
    mutating func connectedByThem(_ peer: AuthorID) {
        failures[peer] = nil
        failingSince[peer] = nil
    }

    /// A dial of `peer` begun at `started` ended at `now` with `reason` (`reached`: whose HELLO came, if any): settles
    /// when to dial it again, and whether it is suspected gone. Returns the failures in a row when this made `peer` a
    /// suspect, nil otherwise.
    ///
    /// - A peer that answered is alive: on the ring again and not failing, whatever became of the session.
    /// - "this node is full" (refused here, a suspect's probe): the view has just changed, so soon again.
    /// - Busy: after ``busyRetry``.
    /// - A session with the peer that lasted over ``longSession``: soon again, with no failure.
    /// - Otherwise a failure: ``backOff(_:reached:now:)``.
    mutating func ended(
        _ peer: AuthorID,
        reason: String,
        reached: AuthorID?,
        started: ContinuousClock.Instant,
        now: ContinuousClock.Instant
    ) -> Int? {
        if reached == peer {
            view.add(peer)
            failures[peer] = nil
            failingSince[peer] = nil
        }
        if reason.contains("this node is full") {
            retryAt[peer] = now + jitter.soon()
        } else if reason.contains("refused: \(WireError.Code.busy)") {
            retryAt[peer] = now + Self.busyRetry * jitter.factor()
        } else if reached == peer && now - started > Self.longSession {
            failures[peer] = nil
            failingSince[peer] = nil
            retryAt[peer] = now + jitter.soon()
        } else {
            return backOff(peer, reached: reached, now: now)
        }
        return nil
    }

    /// A dial that failed: tried again after a back-off that grows with the failures in a row (0.5 s doubling, at
    /// most 30 s); a peer that did not answer for ``suspectAfter`` dials and ``suspectAfterTime`` is suspected gone
    /// and probed every ``probeInterval``. Returns the failures in a row when this made `peer` a suspect.
    private mutating func backOff(_ peer: AuthorID, reached: AuthorID?, now: ContinuousClock.Instant) -> Int? {
        let count = (failures[peer] ?? 0) + 1
        failures[peer] = count
        let since = failingSince[peer] ?? now
        failingSince[peer] = since
        var suspected: Int? = nil
        // A peer that answered is alive: it is backed off, never suspected.
        if reached != peer, count >= Self.suspectAfter, now - since >= Self.suspectAfterTime,
            !view.suspects.contains(peer)
        {
            view.suspect(peer)
            suspected = count
        }
        let base =
            view.suspects.contains(peer)
            ? Self.probeInterval : .milliseconds(Int(min(30, 0.25 * pow(2, Double(min(count, 10)))) * 1000))
        retryAt[peer] = now + base * jitter.factor()
        return suspected
    }
}
