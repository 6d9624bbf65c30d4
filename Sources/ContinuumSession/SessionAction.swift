import ContinuumCore
import ContinuumWire

/// What the ``SessionMachine`` asks its executor to do, in order. Actions that need an answer name the input that
/// takes it (a verification, a store, a clock read): until it comes, the machine holds back what the peer sends
/// next, so that everything is acted on in the order it arrived.
public enum SessionAction<Record: SessionRecord>: Hashable, Sendable {
    /// Queue a message for the peer, after what already waits.
    case send(WireMessage)
    /// Queue messages ahead of everything that waits (pushes, INTEREST).
    case sendUrgent([WireMessage])
    /// Check these records' signatures, then report with ``SessionMachine/verified(_:delivery:bytes:)`` or
    /// ``SessionMachine/verificationFailed(_:)``.
    case verify([[UInt8]], Delivery)
    /// Store this batch in one transaction, then report with ``SessionMachine/stored(_:)`` or
    /// ``SessionMachine/storeFailed()``.
    case store(StoreBatch<Record>)
    /// Call ``SessionMachine/flushTimerFired(_:)`` with this generation after a short quiet time (30 ms): what is
    /// pending is stored even if no more frames come.
    case scheduleFlush(generation: Int)
    /// Read this node's clock and give it to ``SessionMachine/checkGaps(ourClock:)``.
    case checkGaps
    /// After this time, read this node's clock and give it to ``SessionMachine/repair(ourClock:now:)``: records the
    /// peer announced (HAVE) and that did not arrive by another path meanwhile are pulled.
    case scheduleRepair(after: Duration)
    /// Keep these clocks for the next session with the peer (CLOCK_SINCE names one of them).
    case rememberClock(sent: VectorClock?, received: VectorClock?)
    /// The peer's clock of a round arrived; `moved`: it differs from the one it sent last time.
    case peerClockKnown(moved: Bool)
    /// The peer has sent everything we lacked at our round's start (its DONE).
    case roundFinished(UInt32)
    /// Progress of the peer's round: records and bytes received of what it announced.
    case progress(records: UInt64, ofRecords: UInt64, bytes: UInt64, ofBytes: UInt64)
    /// Records from the peer were newly stored.
    case storedFromPeer(Int)
    /// The peer wants these posts' comments pushed (the engine keeps and relays interest).
    case interest(replace: Bool, [PostInterest])
    /// The peer's follows (FOLLOWS): the engine takes them if the peer is a device of this node's account.
    case follows([FollowEntry])
    /// For the photo fetcher.
    case photo(PhotoMessage)
    /// Start the worker that takes ``SessionMachine/nextStreamJob()`` until it returns nil.
    case startStreaming
    /// Start one more worker that takes ``SessionMachine/nextServeJob()`` until it returns nil.
    case startServer
    /// A RECORDS frame may be sent again (an ACK freed the window).
    case windowOpened
    /// Send this ERROR ahead of everything that waits, then end the session.
    case close(WireError)
    /// The peer ended the session with this ERROR: end it without answering.
    case peerRefused(WireError)
}
