import ContinuumCore
import ContinuumWire
import Foundation
import Testing

/// `LogRange.coalescing`: what a HAVE and a REQUEST carry, made from positions in logs.
@Suite("Log ranges made from positions")
struct LogRangeTests {
    private let alice = AuthorID(unchecked: Data(repeating: 0xA1, count: 32))
    private let bob = AuthorID(unchecked: Data(repeating: 0xB0, count: 32))

    @Test("runs of one log's next sequences make one range; a gap, another log or a step back starts a new one")
    func runs() {
        let positions: [(author: AuthorID, sequence: UInt64)] = [
            (alice, 1), (alice, 2), (alice, 3), (alice, 5), (bob, 6), (bob, 7), (alice, 6), (alice, 4), (alice, 4),
        ]
        #expect(
            LogRange.coalescing(positions) == [
                LogRange(author: alice, range: 1...3), LogRange(author: alice, range: 5...5),
                LogRange(author: bob, range: 6...7), LogRange(author: alice, range: 6...6),
                LogRange(author: alice, range: 4...4), LogRange(author: alice, range: 4...4),
            ]
        )
        #expect(LogRange.coalescing([(author: AuthorID, sequence: UInt64)]()).isEmpty)
    }
}
