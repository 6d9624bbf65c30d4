import ContinuumWire

/// How much work one peer may make this node do: a token bucket with a debt limit, charged for every message the
/// peer sends before the message is acted on. Pure: the caller passes the time.
///
/// Each message costs work units in proportion to what acting on it costs this node (``cost(of:)``): a PING one
/// unit, an INTEREST of 4,096 entries about 225, a CLOCK of 100,000 entries 5,200. The bucket refills at
/// ``Limits/rate`` units a second up to ``Limits/burst``, and may go into debt down to ``Limits/maxDebt``: a peer
/// whose message would take it deeper is refused with ERROR *over budget* and disconnected. Only that peer is
/// affected: every session has its own bucket. A flooder reaches the limit within a fraction of a second of
/// flooding (it offers far more than the refill), while what an honest peer sends fits with room to spare: even a
/// hub's start with the largest interest and clock the protocol allows (about 10,800 units) stays inside the
/// burst and the debt, and afterwards a session sends a round a minute, a PING every 15 s, and photo and thumbnail
/// requests bounded by the fetcher (8 and 64 at a time).
public struct PeerBudget: Sendable {
    /// The budget's size.
    public struct Limits: Sendable, Hashable {
        /// Work units a second.
        public var rate: Double
        /// Work units that may be spent at once, after a quiet time.
        public var burst: Double
        /// How far below zero the bucket may go before the peer is refused.
        public var maxDebt: Double

        public init(rate: Double = 2_000, burst: Double = 8_000, maxDebt: Double = 4_000) {
            self.rate = rate
            self.burst = burst
            self.maxDebt = maxDebt
        }
    }

    public let limits: Limits
    /// Units left; negative while the peer is in debt.
    public private(set) var tokens: Double
    private var updated: ContinuousClock.Instant?

    public init(limits: Limits = Limits()) {
        self.limits = limits
        tokens = limits.burst
    }

    /// Charges `message`, received at `now`: nil when it may be acted on, else the ERROR that refuses it.
    public mutating func charge(_ message: WireMessage, now: ContinuousClock.Instant) -> WireError? {
        if let updated {
            let elapsed = now - updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            tokens = min(limits.burst, tokens + max(0, seconds) * limits.rate)
        }
        updated = now
        let cost = Self.cost(of: message)
        guard tokens - cost >= -limits.maxDebt else {
            return WireError(
                .overBudget,
                "the peer sent more work than its budget allows (\(Int(limits.rate)) units/s, \(Int(limits.burst)) "
                    + "at once, \(Int(limits.maxDebt)) of debt); last: \(message.typeName), "
                    + "\(Int(cost.rounded(.up))) units"
            )
        }
        tokens -= cost
        return nil
    }

    /// The work units a message costs: a base for what acting on it starts, plus a share per entry where the work
    /// (decoding, merging, answering) grows with the entries. Data this node asked for (photo chunks) costs little;
    /// records cost per record (each is verified).
    public static func cost(of message: WireMessage) -> Double {
        switch message {
        case .hello, .error, .membership, .joined: 0
        case .ping, .pong, .offer, .done, .photoEnd, .photoMissing, .thumbMissing: 1
        // A round's clock is kept in the store and answered with a scan of this node's clock.
        case .clock(_, let clock): 200 + Double(clock.heads.count) / 20
        case .clockSince(_, _, let changes): 200 + Double(changes.heads.count) / 20
        case .clockUnknown: 20
        case .ack(let clock): 1 + Double(clock.heads.count) / 20
        // Each range is a read of the store when it is answered.
        case .request(let ranges): 10 + Double(ranges.count) / 4
        case .have(let ranges): 5 + Double(ranges.count) / 20
        case .tree: 5
        case .interest(_, let entries): 20 + Double(entries.count) / 20
        case .records(_, let records), .push(let records): 1 + Double(records.count) / 100
        case .photoWant: 5
        case .photoData: 0.1
        case .thumbWant: 2
        case .thumbData: 1
        }
    }
}
