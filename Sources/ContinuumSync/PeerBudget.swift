import ContinuumWire

/// How much work one peer may make this node do: a token bucket, charged for every message the peer sends before
/// the message is acted on. Pure: the caller passes the time.
///
/// Each message costs work units in proportion to what acting on it costs this node (``cost(of:)``): a PING one
/// unit, an INTEREST of 4,096 entries about 150, a CLOCK of 100,000 entries about 3,300. The bucket refills at
/// ``Limits/rate`` units a second up to ``Limits/burst``. A message that finds the bucket empty is delayed until it
/// refills (the session stops reading, so TCP slows the peer down); a peer that has been over its budget for
/// longer than ``Limits/maxThrottled`` without a pause is refused with ERROR *over budget* and disconnected. Only
/// that peer is affected: every session has its own bucket.
///
/// Honest peers stay far below the rate: a session sends a few rounds a minute, a PING every 15 s, INTEREST when
/// follows change, and its photo and thumbnail requests are bounded by the fetcher (8 and 64 at a time).
public struct PeerBudget: Sendable {
    /// The budget's size.
    public struct Limits: Sendable, Hashable {
        /// Work units a second.
        public var rate: Double
        /// Work units that may be spent at once, after a quiet time.
        public var burst: Double
        /// A peer continuously over budget for this long is disconnected.
        public var maxThrottled: Duration

        public init(rate: Double = 2_000, burst: Double = 4_000, maxThrottled: Duration = .milliseconds(500)) {
            self.rate = rate
            self.burst = burst
            self.maxThrottled = maxThrottled
        }
    }

    /// What to do with a message.
    public enum Verdict: Sendable, Hashable {
        /// Act on it now.
        case proceed
        /// Act on it after this pause (the peer is over its budget, not yet for long).
        case delay(Duration)
        /// Refuse it: send this ERROR and end the session.
        case refuse(WireError)
    }

    public let limits: Limits
    /// Units left; negative while the peer is in debt.
    public private(set) var tokens: Double
    private var updated: ContinuousClock.Instant?
    /// Since when the peer has been over its budget without the bucket refilling to half.
    private var throttledSince: ContinuousClock.Instant?

    public init(limits: Limits = Limits()) {
        self.limits = limits
        tokens = limits.burst
    }

    /// Charges `message`, received at `now`.
    public mutating func charge(_ message: WireMessage, now: ContinuousClock.Instant) -> Verdict {
        if let updated {
            let elapsed = now - updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            tokens = min(limits.burst, tokens + max(0, seconds) * limits.rate)
        }
        updated = now
        let cost = Self.cost(of: message)
        tokens -= cost
        if tokens >= 0 {
            if tokens >= limits.burst / 2 { throttledSince = nil }
            return .proceed
        }
        let since = throttledSince ?? now
        throttledSince = since
        if now - since > limits.maxThrottled {
            return .refuse(
                WireError(
                    .overBudget,
                    "the peer sent more work than its budget of \(Int(limits.rate)) units/s for over "
                        + "\(limits.maxThrottled) (last: \(message.typeName), \(Int(cost.rounded(.up))) units)"
                )
            )
        }
        return .delay(.milliseconds(Int64((-tokens / limits.rate * 1000).rounded(.up))))
    }

    /// The work units a message costs: a base for what acting on it starts, plus its size where the work grows with
    /// it. Data this node asked for (photo chunks) costs little; records cost per record (each is verified).
    public static func cost(of message: WireMessage) -> Double {
        switch message {
        case .hello, .error: 0
        case .ping, .pong, .offer, .done, .photoEnd, .photoMissing, .thumbMissing: 1
        // A round's clock is kept in the store and answered with a scan of this node's clock.
        case .clock(_, let clock): 200 + Double(clock.heads.count) / 32
        case .clockSince(_, _, let changes): 200 + Double(changes.heads.count) / 32
        case .clockUnknown: 20
        case .ack(let clock): 1 + Double(clock.heads.count) / 32
        case .request(let ranges): 10 + Double(ranges.count) / 8
        case .interest(_, let entries): 20 + Double(entries.count) / 32
        case .records(_, let records), .push(let records): 1 + Double(records.count) / 100
        case .photoWant: 5
        case .photoData: 0.1
        case .thumbWant: 2
        case .thumbData: 1
        }
    }
}
