import ContinuumCore
import ContinuumWire
import Foundation
import Testing

@testable import ContinuumNode

/// The overlay dialler's decisions (``DialPlan``): back-off, suspicion, busy and full retries, probes, pinned peers,
/// what to dial and which sessions to end. The clock and the jitter are the test's, so every wait is exact.
@Suite("Dial plan: whom the overlay dials, when, and which sessions make room")
struct DialPlanTests {
    /// A node id whose 32 bytes are all `byte`: ids order as their bytes do.
    static func id(_ byte: UInt8) -> AuthorID { AuthorID(unchecked: Data(repeating: byte, count: 32)) }

    /// Jitter that always gives `factor`, and 300 ms for "soon".
    static func jitter(_ factor: Double = 1) -> DialPlan.Jitter {
        DialPlan.Jitter(factor: { factor }, soon: { .milliseconds(300) })
    }

    let start = ContinuousClock.now
    let own = Self.id(50)
    let peer = Self.id(60)
    /// A dial that found no one.
    let refused = "connection refused"

    /// A plan of this node's that knows `peers` by discovery.
    func knowing(_ peers: [AuthorID], maxPeers: Int = 0, factor: Double = 1) -> DialPlan {
        var plan = DialPlan(own: own, maxPeers: maxPeers, jitter: Self.jitter(factor))
        for peer in peers { #expect(plan.found(peer) == true) }
        return plan
    }

    /// `at` as seconds after `start`.
    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int((seconds * 1000).rounded())) }

    /// A dial of `peer` that failed at `seconds` (it began then too), with `reached` the node that answered, if any.
    func fail(_ plan: inout DialPlan, _ peer: AuthorID, at seconds: Double, reached: AuthorID? = nil) -> Int? {
        plan.ended(peer, reason: refused, reached: reached, started: at(seconds), now: at(seconds))
    }

    @Test("a peer found announcing an earlier protocol version is not dialled; at this one or a later one, it is")
    func otherVersion() {
        var plan = DialPlan(own: own, maxPeers: 0, jitter: Self.jitter())
        let older = Self.id(61)
        #expect(plan.found(older, speaking: WireLimits.protocolVersion - 1) == false)
        #expect(plan.found(peer, speaking: WireLimits.protocolVersion) == true)
        #expect(plan.reconcile(everyone: [], overlay: [], now: at(0)).dial == [peer])
        // Upgraded past this node (it answers at this node's version): dialled. Then an earlier one: out of the view.
        #expect(plan.found(older, speaking: WireLimits.protocolVersion + 1) == true)
        #expect(plan.reconcile(everyone: [peer], overlay: [peer], now: at(1)).dial == [older])
        plan.stopDialling(older)
        #expect(plan.found(older, speaking: WireLimits.protocolVersion - 1) == true)
        #expect(plan.reconcile(everyone: [peer], overlay: [peer], now: at(2)).dial == [])
        // A pinned peer (`--peer ID@HOST:PORT`) stays: the person asked for it.
        var pinned = DialPlan(own: own, maxPeers: 0, jitter: Self.jitter())
        #expect(pinned.pin(older) == true)
        #expect(pinned.found(older, speaking: WireLimits.protocolVersion - 1) == false)
        #expect(pinned.reconcile(everyone: [], overlay: [], now: at(0)).dial == [older])
    }

    @Test("the back-off doubles from 0.5 s with each failure in a row and stops at 30 s, times the jitter")
    func backOff() {
        var plan = knowing([peer])
        let expected: [Duration] = [
            .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30),
            .seconds(30), .seconds(30), .seconds(30), .seconds(30), .seconds(30),
        ]
        for (index, wait) in expected.enumerated() {
            // All at the same instant: never 10 s of failing, so never suspected.
            #expect(fail(&plan, peer, at: 0) == nil)
            #expect(plan.failures[peer] == index + 1)
            #expect(plan.retryAt[peer] == start + wait, "failure \(index + 1)")
        }
        #expect(plan.view.suspects.isEmpty)

        var high = knowing([peer], factor: 1.25)
        var low = knowing([peer], factor: 0.75)
        for _ in 0..<7 {
            _ = fail(&high, peer, at: 0)
            _ = fail(&low, peer, at: 0)
        }
        #expect(high.retryAt[peer] == start + .milliseconds(37_500))
        #expect(low.retryAt[peer] == start + .milliseconds(22_500))
        var first = knowing([peer], factor: 0.75)
        _ = fail(&first, peer, at: 0)
        #expect(first.retryAt[peer] == start + .milliseconds(375))
    }

    @Test("a peer is suspected only after 3 failures in a row and 10 s of failing, both")
    func suspicion() {
        // Three failures within 10 s: not yet; the fourth, 10 s after the first: suspected.
        var quick = knowing([peer])
        #expect(fail(&quick, peer, at: 0) == nil)
        #expect(fail(&quick, peer, at: 1) == nil)
        #expect(fail(&quick, peer, at: 9.999) == nil)
        #expect(quick.view.suspects.isEmpty)
        #expect(quick.view.neighbours == [peer])
        #expect(fail(&quick, peer, at: 10) == 4)
        #expect(quick.view.suspects == [peer])
        #expect(quick.view.neighbours.isEmpty)
        #expect(quick.retryAt[peer] == at(30), "a suspect is probed after 20 s")

        // Two failures 20 s apart: not yet; the third: suspected.
        var slow = knowing([peer])
        #expect(fail(&slow, peer, at: 0) == nil)
        #expect(fail(&slow, peer, at: 20) == nil)
        #expect(slow.view.suspects.isEmpty)
        #expect(fail(&slow, peer, at: 21) == 3)
        #expect(slow.view.suspects == [peer])

        // Another node answering at the peer's address is no answer from the peer.
        var wrong = knowing([peer])
        for seconds in [0.0, 5, 10] { _ = fail(&wrong, peer, at: seconds, reached: Self.id(99)) }
        #expect(wrong.view.suspects == [peer])
    }

    @Test("a peer that answered is backed off 0.5 s and never suspected, however often its session fails")
    func answeredNeverSuspected() {
        var plan = knowing([peer])
        for step in 0..<10 {
            let now = Double(step) * 20
            #expect(fail(&plan, peer, at: now, reached: peer) == nil)
            #expect(plan.failures[peer] == 1)
            #expect(plan.retryAt[peer] == at(now + 0.5))
        }
        #expect(plan.view.suspects.isEmpty)
        #expect(plan.view.neighbours == [peer])
    }

    @Test("busy: again after 30 s times the jitter, with no failure counted")
    func busy() {
        for (factor, wait) in [(1.0, 30_000), (0.75, 22_500), (1.25, 37_500)] {
            var plan = knowing([peer], factor: factor)
            let suspected = plan.ended(
                peer,
                reason: "the peer refused: busy: this node keeps 8 sessions (--max-peers)",
                reached: nil,
                started: at(0),
                now: at(1)
            )
            #expect(suspected == nil)
            #expect(plan.retryAt[peer] == at(1) + .milliseconds(wait))
            #expect(plan.failures[peer] == nil)
        }
    }

    @Test("this node is full (its own refusal of a probe): again soon; a session over 10 s: again soon, no failure")
    func soon() {
        var full = knowing([peer])
        _ = fail(&full, peer, at: 0)
        let reason = "refused: busy: this node is full; 606060606060 is not a neighbour"
        #expect(full.ended(peer, reason: reason, reached: peer, started: at(1), now: at(1)) == nil)
        #expect(full.retryAt[peer] == at(1.3))
        #expect(full.failures[peer] == nil, "it answered")

        var long = knowing([peer])
        _ = fail(&long, peer, at: 0)
        #expect(long.ended(peer, reason: "closed", reached: peer, started: at(1), now: at(11.001)) == nil)
        #expect(long.retryAt[peer] == at(11.301))
        #expect(long.failures[peer] == nil)

        // Exactly 10 s is not long: an ordinary back-off (the failures start again from 1, since it answered).
        var short = knowing([peer])
        _ = fail(&short, peer, at: 0)
        _ = fail(&short, peer, at: 0)
        #expect(short.ended(peer, reason: "closed", reached: peer, started: at(1), now: at(11)) == nil)
        #expect(short.retryAt[peer] == at(11.5))
        #expect(short.failures[peer] == 1)
    }

    @Test("a suspect is dialled again every 20 s, and a session with it puts it back on the ring")
    func probes() {
        var plan = knowing([peer])
        for seconds in [0.0, 5, 10] { _ = fail(&plan, peer, at: seconds) }
        #expect(plan.view.suspects == [peer])
        #expect(plan.reconcile(everyone: [], overlay: [], now: at(29.999)).dial == [])
        #expect(plan.reconcile(everyone: [], overlay: [], now: at(30)).dial == [peer])
        plan.stopDialling(peer)
        #expect(fail(&plan, peer, at: 31) == nil, "already a suspect")
        #expect(plan.retryAt[peer] == at(51))
        #expect(plan.failures[peer] == 4)

        #expect(plan.seen(peer) == true)
        #expect(plan.view.suspects.isEmpty)
        #expect(plan.view.neighbours == [peer])
        #expect(plan.failures[peer] == nil)
        #expect(plan.failingSince[peer] == nil)
        #expect(plan.seen(peer) == false, "not a suspect any more: nothing changes")
        #expect(plan.seen(Self.id(99)) == false, "a peer with no address is not in the plan")
        #expect(plan.view.known == [peer])
    }

    @Test("a probe that reaches the suspect puts it back on the ring")
    func probeAnswered() {
        var plan = knowing([peer])
        for seconds in [0.0, 5, 10] { _ = fail(&plan, peer, at: seconds) }
        let reason = "refused: busy: this node is full; 606060606060 is not a neighbour"
        _ = plan.ended(peer, reason: reason, reached: peer, started: at(30), now: at(30))
        #expect(plan.view.suspects.isEmpty)
        #expect(plan.view.neighbours == [peer])
    }

    @Test("a pinned peer stays when discovery loses it; a discovered one goes; this node is never added")
    func pinned() {
        var plan = knowing([])
        let found = Self.id(70)
        #expect(plan.pin(peer) == true)
        #expect(plan.found(found) == true)
        #expect(plan.pin(own) == false)
        #expect(plan.found(own) == false)
        #expect(plan.removed(peer) == false)
        #expect(plan.removed(found) == true)
        #expect(plan.view.known == [peer])
        #expect(plan.addressed == [peer, found])
    }

    @Test("discovery finding a failing peer again forgets its failures and its wait")
    func foundAgain() {
        var plan = knowing([peer])
        for seconds in [0.0, 5] { _ = fail(&plan, peer, at: seconds) }
        #expect(plan.reconcile(everyone: [], overlay: [], now: at(5.5)).dial == [])
        #expect(plan.found(peer) == true)
        #expect(plan.failures[peer] == nil)
        #expect(plan.failingSince[peer] == nil)
        #expect(plan.retryAt[peer] == nil)
        #expect(plan.reconcile(everyone: [], overlay: [], now: at(5.5)).dial == [peer])
    }

    @Test("a dial to a peer with a smaller id first waits for the peer's own, unless it failed before")
    func tieWait() {
        var plan = knowing([Self.id(20), peer])
        #expect(plan.waitsForTheirDial(Self.id(20)))
        #expect(!plan.waitsForTheirDial(peer))
        _ = fail(&plan, Self.id(20), at: 0)
        #expect(!plan.waitsForTheirDial(Self.id(20)))
        plan.connectedByThem(Self.id(20))
        #expect(plan.waitsForTheirDial(Self.id(20)))
    }

    /// Six nodes at most two sessions each: the ring is 10, 20, 50 (this node), 60, 70, 80, and this node's
    /// neighbours are 20 and 60 (distance 1 both ways); 70 is at distance 2, 80 at 3.
    func ring() -> DialPlan {
        knowing([10, 20, 60, 70, 80].map { Self.id($0) }, maxPeers: 2)
    }

    @Test("reconcile dials the neighbours that are due, not connected and not being dialled")
    func dials() {
        var plan = ring()
        #expect(plan.view.neighbours == [Self.id(20), Self.id(60)])
        #expect(plan.reconcile(everyone: [], overlay: [], now: at(0)).dial == [Self.id(20), Self.id(60)])
        #expect(plan.reconcile(everyone: [], overlay: [], now: at(0)).dial == [], "both are being dialled")
        plan.stopDialling(Self.id(20))
        plan.stopDialling(Self.id(60))
        let connected: Set = [Self.id(20)]
        #expect(plan.reconcile(everyone: connected, overlay: connected, now: at(0)).dial == [Self.id(60)])
        plan.stopDialling(Self.id(60))
        _ = fail(&plan, Self.id(60), at: 1)
        #expect(plan.reconcile(everyone: [], overlay: [], now: at(1.499)).dial == [Self.id(20)])
        plan.stopDialling(Self.id(20))
        #expect(plan.reconcile(everyone: [], overlay: [], now: at(1.5)).dial == [Self.id(20), Self.id(60)])
    }

    @Test("reconcile dials a due suspect as well as the neighbours")
    func dialsSuspects() {
        var plan = ring()
        for seconds in [0.0, 5, 10] { _ = fail(&plan, Self.id(60), at: seconds) }
        // 60 is off the ring: 10, 20, 50, 70, 80, so the neighbours are 20 and 70.
        #expect(plan.view.neighbours == [Self.id(20), Self.id(70)])
        #expect(plan.reconcile(everyone: [], overlay: [], now: at(10)).dial == [Self.id(20), Self.id(70)])
        #expect(plan.reconcile(everyone: [], overlay: [], now: at(30)).dial == [Self.id(60)])
    }

    @Test("sessions beyond the bound end for neighbours that did not fail, the farthest first")
    func makesRoom() {
        var plan = ring()
        let others: Set = [Self.id(70), Self.id(80)]
        let both = plan.reconcile(everyone: others, overlay: others, now: at(0))
        #expect(both.end == [Self.id(80), Self.id(70)])
        #expect(both.dial == [Self.id(20), Self.id(60)])
        plan.stopDialling(Self.id(20))
        plan.stopDialling(Self.id(60))

        // 20 failed: it is dialled when due, but no session ends for it.
        _ = fail(&plan, Self.id(20), at: 1)
        let one = plan.reconcile(everyone: others, overlay: others, now: at(2))
        #expect(one.end == [Self.id(80)])
        #expect(one.dial == [Self.id(20), Self.id(60)])
        plan.stopDialling(Self.id(20))
        plan.stopDialling(Self.id(60))

        // Both failed: nothing ends.
        _ = fail(&plan, Self.id(60), at: 2)
        #expect(plan.reconcile(everyone: others, overlay: others, now: at(5)).end == [])
    }

    @Test("no session ends for a neighbour that has a session outside the bound already")
    func outsideTheBound() {
        var plan = ring()
        let others: Set = [Self.id(70), Self.id(80)]
        let decided = plan.reconcile(everyone: others.union([Self.id(60)]), overlay: others, now: at(0))
        #expect(decided.end == [Self.id(80)])
        #expect(decided.dial == [Self.id(20)])
    }

    @Test("with no bound every known peer is dialled and no session is ever ended")
    func fullMesh() {
        var plan = knowing([10, 20, 60, 70, 80].map { Self.id($0) })
        let decided = plan.reconcile(everyone: [], overlay: [], now: at(0))
        #expect(decided.dial == [10, 20, 60, 70, 80].map { Self.id($0) })
        #expect(decided.end == [])
    }
}
