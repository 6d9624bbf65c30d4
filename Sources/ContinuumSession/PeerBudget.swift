import ContinuumWire

/// How much work one peer may make this node do: a token bucket with a debt limit, charged for every message the
/// peer sends before the message is acted on, and for what its records turned out to cost once they were looked
/// up or verified. Pure: the caller passes the time.
///
/// A work unit is about 0.1 ms of this node's CPU in a debug build (measured, PROTOCOL.md §7.8.15; a release build
/// is several times faster, so it stays as well protected): each message costs what acting on it costs, as a base
/// plus a share per entry, range or record (``cost(of:)``). A PING costs one unit, a CLOCK of 100,000 entries
/// 9,700 (but the session's first only 200: its opening). The bucket refills at ``Limits/rate`` units a second up
/// to ``Limits/burst``, and may go into debt down to ``Limits/maxDebt``: a peer whose message would take it deeper
/// is refused with ERROR *over budget* and disconnected. Only that peer is affected: every session has its own
/// bucket. A flooder reaches the limit within a second or two of flooding (it offers far more than the refill),
/// while what an honest peer sends fits: even a hub's start with the largest interest and clock the protocol
/// allows (about 9,900 units) stays inside the burst, and afterwards a session sends a round a minute, a PING
/// every 15 s, and photo and thumbnail requests bounded by the fetcher (8 and 64 at a time).
///
/// Records new to this node cost little (1 unit and 1/100 a record): each record crosses a connection once, and
/// storing what the group wrote is the work the node is for. What brings nothing costs what it caused: a record
/// found held already ``heldRecord`` or ``heldRecordCrossing`` (looked up and compared, never verified), a copy
/// that raced another session's copy of it past the lookup ``heldRecordCrossing`` too, a record verified and then
/// not stored because its log is of a group the session does not share ``wastedRecord``.
public struct PeerBudget: Sendable {
    /// The budget's size.
    public struct Limits: Sendable, Hashable {
        /// Work units a second.
        public var rate: Double
        /// Work units that may be spent at once, after a quiet time.
        public var burst: Double
        /// How far below zero the bucket may go before the peer is refused.
        public var maxDebt: Double

        public init(rate: Double = 2_000, burst: Double = 10_000, maxDebt: Double = 1_000) {
            self.rate = rate
            self.burst = burst
            self.maxDebt = maxDebt
        }
    }

    /// Units a record costs that was found held already and that the peer knew this node held (the last clock
    /// sent to it covers the record): its lookup and the comparison of its bytes, and more, since an honest peer
    /// does not send it.
    public static let heldRecord = 0.5
    /// Units a record costs that was found held already but that the peer could not know this node held (it came
    /// from another peer since this node's last clock to this one, as when two peers answer the same round): its
    /// lookup and comparison only, less than the refill, so that a round answered twice is never refused.
    public static let heldRecordCrossing = 0.05
    /// Units a record costs that was verified and then not stored because its log is of a group the session does not
    /// share: its signature check, for nothing.
    public static let wastedRecord = 5.0

    public let limits: Limits
    /// Units left; negative while the peer is in debt.
    public private(set) var tokens: Double
    private var updated: ContinuousClock.Instant?
    /// Whether the session's opening clock (its first CLOCK or CLOCK_SINCE) was charged.
    private var openingClockCharged = false

    public init(limits: Limits = Limits()) {
        self.limits = limits
        tokens = limits.burst
    }

    /// Charges `message`, received at `now`: nil when it may be acted on, else the ERROR that refuses it.
    /// The session's first CLOCK or CLOCK_SINCE is its opening, which every peer sends once: it costs its base
    /// alone (``openingClock``), so that the largest start the protocol allows fits the burst and the debt.
    public mutating func charge(_ message: WireMessage, now: ContinuousClock.Instant) -> WireError? {
        refill(at: now)
        var cost = Self.cost(of: message)
        switch message {
        case .clock, .clockSince:
            if !openingClockCharged { cost = min(cost, Self.openingClock) }
            openingClockCharged = true
        default: break
        }
        return charge(cost, for: message.typeName)
    }

    /// What the session's opening clock costs, whatever its size.
    public static let openingClock = 200.0

    /// Charges `units` of work that a message already made this node do (`what` names it in the ERROR), at the
    /// time of the last charge: nil when the peer is still within its budget, else the ERROR that refuses it.
    public mutating func charge(_ units: Double, for what: String) -> WireError? {
        guard tokens - units >= -limits.maxDebt else {
            return WireError(
                .overBudget,
                "the peer sent more work than its budget allows (\(Int(limits.rate)) units/s, \(Int(limits.burst)) "
                    + "at once, \(Int(limits.maxDebt)) of debt); last: \(what), \(Int(units.rounded(.up))) units"
            )
        }
        tokens -= units
        return nil
    }

    private mutating func refill(at now: ContinuousClock.Instant) {
        if let updated {
            let elapsed = now - updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            tokens = min(limits.burst, tokens + max(0, seconds) * limits.rate)
        }
        updated = now
    }

    /// The work units a message costs before it is acted on: a base for what acting on it starts, plus a share per
    /// entry where the work (decoding, merging, answering) grows with the entries. Measured (PROTOCOL.md §7.8.15);
    /// the smallest charge is one unit.
    public static func cost(of message: WireMessage) -> Double {
        switch message {
        case .hello, .error, .membership, .joined, .linking, .consent, .linked, .recovery: 0
        case .ping, .pong, .offer, .done, .photoEnd, .photoMissing, .thumbMissing: 1
        // Decoded, compared with the last one, merged into what the peer holds, kept in the store and answered
        // with a scan of this node's clock.
        case .clock(_, let clock): 200 + Double(clock.heads.count) * 0.095
        case .clockSince(_, _, let changes): 200 + Double(changes.heads.count) * 0.095
        case .clockUnknown: 20
        // Decoded and merged into what the peer holds.
        case .ack(let clock): 1 + Double(clock.heads.count) * 0.056
        // Each range is a read of the store when it is answered.
        case .request(let ranges): 10 + Double(ranges.count) * 0.25
        // Each range is noted, and pulled (a read of the clock, a REQUEST) if it does not come by the tree.
        case .have(let ranges): 5 + Double(ranges.count) * 0.1
        case .tree: 5
        case .interest(_, let entries): 20 + Double(entries.count) * 0.09
        // Taken only from a device of this node's account: one write, a lookup and an update per entry.
        case .follows(let entries): 20 + Double(entries.count) * 0.1
        // Decoded; each record is then looked up (``heldRecord``), or verified and stored.
        case .records(_, let records), .push(let records): 1 + Double(records.count) * 0.01
        case .photoWant: 5
        // Only data this node asked for is taken (anything else is refused before it costs more): a tenth of a unit
        // and one a MiB (0.35 a 256 KiB chunk), so that a peer serving what this node asked for at loopback speed
        // (4,000 chunks a second) stays well inside the refill; a photo the size of the limit (1 GiB) costs
        // about 1,400 units.
        case .photoData(_, _, let chunk): 0.1 + Double(chunk.count) / 1_048_576
        case .thumbWant: 2
        case .thumbData: 1
        // A lookup and a read of at most 64 KiB each (measured with many small photos: PROTOCOL.md §7.8.15): 64 of
        // them cost 18 units, so that a receiver fetching 2,000 small photos a second spends under a third of the
        // refill.
        case .photosWant(let hashes): 2 + Double(hashes.count) * 0.25
        // Only photos this node asked for are taken (anything else is refused before it costs more), as PHOTO_DATA.
        case .photos(let photos): 0.1 + Double(photos.reduce(0) { $0 + ($1.bytes?.count ?? 0) }) / 1_048_576
        // Read whole and dropped: a PING's unit, and one a MiB as for photo data, so that a flood of them is
        // refused like any other.
        case .optional(_, let payload): 1 + Double(payload.count) / 1_048_576
        }
    }
}
