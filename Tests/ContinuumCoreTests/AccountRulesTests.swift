import ContinuumCore
import ContinuumTestSupport
import Foundation
import Testing

/// The account rule (AccountRules, design note §V3.5): every scenario of Resources/account-scenarios.json, whose
/// expected values were written by scripts/account_rules.py (an independent model of the design text) and checked
/// by hand against the outcomes table; the same state for every order of the records; and hand-written hostile
/// cases.
@Suite("Account rule: AccountRules")
struct AccountRulesTests {
    typealias Event = AccountEvent<String, String>
    typealias State = AccountState<String, String>

    /// The scenario file as stored.
    struct ScenarioFile: Decodable {
        struct Entry: Decodable {
            var through: UInt64
            var head: String?
        }
        struct Record: Decodable {
            var id: String
            var author: String
            var kind: String
            var sequence: UInt64
            var previous: String?
            var target: String?
            var frontier: [String: Entry]?
        }
        struct Expected: Decodable, Equatable {
            var devices: [String]
            var removed: [String]
            var countingRemovals: [String]
            var countingRecords: [String]

            enum CodingKeys: String, CodingKey {
                case devices, removed
                case countingRemovals = "counting_removals"
                case countingRecords = "counting_records"
            }
        }
        struct Scenario: Decodable {
            var name: String
            var description: String
            var founder: String
            var recovery: String?
            var records: [Record]
            var expected: Expected
        }
        var scenarios: [Scenario]
    }

    /// A scenario the file format does not allow, named with its record.
    struct BadScenario: Error, CustomStringConvertible {
        var description: String
    }

    /// The scenarios of Resources/account-scenarios.json.
    static func load() throws -> [ScenarioFile.Scenario] {
        let url = try #require(Bundle.module.url(forResource: "Resources/account-scenarios", withExtension: "json"))
        return try JSONDecoder().decode(ScenarioFile.self, from: Data(contentsOf: url)).scenarios
    }

    /// The scenario's records as events; a left-out `previous` is the one record of the author at sequence - 1.
    static func events(of scenario: ScenarioFile.Scenario) throws -> [Event] {
        try scenario.records.map { record in
            var previous = record.previous
            if previous == nil, record.sequence > 1 {
                let below = scenario.records.filter { $0.author == record.author && $0.sequence == record.sequence - 1 }
                guard below.count == 1 else {
                    throw BadScenario(description: "\(scenario.name): \(record.id) needs an explicit previous")
                }
                previous = below[0].id
            }
            return Event(
                id: record.id,
                author: record.author,
                sequence: record.sequence,
                previous: previous,
                change: try change(of: record, in: scenario.name)
            )
        }
    }

    /// What `record` does, from its kind, target and frontier.
    static func change(of record: ScenarioFile.Record, in name: String) throws -> AccountChange<String, String> {
        switch (record.kind, record.target, record.frontier) {
        case ("found", nil, nil): return .found
        case ("join", nil, nil): return .join
        case ("add", let target?, nil): return .add(device: target)
        case ("remove", let target?, let frontier?):
            return .remove(
                device: target,
                frontier: frontier.mapValues { AccountFrontierEntry(through: $0.through, head: $0.head) }
            )
        default: throw BadScenario(description: "\(name): \(record.id) is not a record the file format allows")
        }
    }

    /// The state in the scenario file's shape: sorted lists, record ids in their numeric order.
    static func summary(_ state: State) -> ScenarioFile.Expected {
        let byNumber: (String, String) -> Bool = { a, b in
            (a.count, a) < (b.count, b)
        }
        return ScenarioFile.Expected(
            devices: state.devices.sorted(),
            removed: state.removed.sorted(),
            countingRemovals: state.removals.values.flatMap { $0.map(\.id) }.sorted(by: byNumber),
            countingRecords: state.countingRecords.sorted(by: byNumber)
        )
    }

    /// The state of the account founded by `founder` from `events`.
    static func state(_ events: [Event], founder: String = "L", recovery: String? = nil) -> State {
        AccountRules.state(of: events, founder: founder, recovery: recovery)
    }

    @Test("every scenario of account-scenarios.json gives the expected state")
    func scenarios() throws {
        let scenarios = try Self.load()
        #expect(scenarios.count == 28, "a scenario was added or lost: update this count on purpose")
        for scenario in scenarios {
            let state = Self.state(
                try Self.events(of: scenario),
                founder: scenario.founder,
                recovery: scenario.recovery
            )
            #expect(Self.summary(state) == scenario.expected, "scenario \(scenario.name): \(scenario.description)")
        }
    }

    @Test("every scenario gives the same state for 1,000 seeded random orders of its records")
    func orderDoesNotMatter() throws {
        for (index, scenario) in try Self.load().enumerated() {
            let events = try Self.events(of: scenario)
            let first = Self.state(events, founder: scenario.founder, recovery: scenario.recovery)
            for round in 0..<1000 {
                let seed = UInt64(index) << 32 | UInt64(round)
                var random = SplitMix64(seed: seed)
                let shuffled = events.shuffled(using: &random)
                let again = Self.state(shuffled, founder: scenario.founder, recovery: scenario.recovery)
                guard again == first else {
                    Issue.record("scenario \(scenario.name): another state for seed \(seed): \(shuffled.map(\.id))")
                    break
                }
            }
        }
    }

    // MARK: Hostile records, by hand

    /// The founding record `id` of `author`.
    static func found(_ id: String, _ author: String) -> Event {
        Event(id: id, author: author, sequence: 1, previous: nil, change: .found)
    }

    /// The joining record `id` of `author`.
    static func join(_ id: String, _ author: String) -> Event {
        Event(id: id, author: author, sequence: 1, previous: nil, change: .join)
    }

    static func add(
        _ id: String,
        _ author: String,
        _ sequence: UInt64,
        after previous: String,
        _ device: String
    )
        -> Event
    {
        Event(id: id, author: author, sequence: sequence, previous: previous, change: .add(device: device))
    }

    /// A removal of `device` by `author` at `sequence` after `previous`, keeping (through, head) of each listed log.
    static func remove(
        _ id: String,
        _ author: String,
        _ sequence: UInt64,
        after previous: String,
        _ device: String,
        keeping frontier: [String: (UInt64, String?)]
    ) -> Event {
        let frontier = frontier.mapValues { AccountFrontierEntry(through: $0.0, head: $0.1) }
        return Event(
            id: id,
            author: author,
            sequence: sequence,
            previous: previous,
            change: .remove(device: device, frontier: frontier)
        )
    }

    @Test("a removal signed by a key never added is inert, whoever it names")
    func removalByAStranger() {
        let state = Self.state([
            Self.found("a1", "L"),
            Self.add("a2", "L", 2, after: "a1", "M"),
            Self.join("s1", "S"),
            Self.remove("s2", "S", 2, after: "s1", "L", keeping: [:]),
            Self.remove("s3", "S", 3, after: "s2", "M", keeping: ["M": (0, nil)]),
        ])
        #expect(state.devices == ["L", "M"])
        #expect(state.removed.isEmpty)
        #expect(state.removals.isEmpty)
        #expect(state.countingRecords == ["a1", "a2"])
    }

    @Test("a removal naming the recovery key is inert, even by the founder")
    func removalOfTheRecoveryKey() {
        let state = Self.state(
            [Self.found("a1", "L"), Self.remove("a2", "L", 2, after: "a1", "k", keeping: [:])],
            recovery: "k"
        )
        #expect(state.devices == ["L"])
        #expect(state.removed.isEmpty)
        #expect(state.countingRecords == ["a1"])
    }

    /// L adds D; D adds E honestly (d2); L removes D keeping D's log through d2. The thief with D then forks d2 with
    /// an add of T (t-add, sequence 2 after d1) and signs an add of U beyond the frontier (sequence 3); T and U both
    /// remove L.
    static let thief: [Event] = [
        found("l1", "L"),
        add("l2", "L", 2, after: "l1", "D"),
        join("d1", "D"),
        add("d2", "D", 2, after: "d1", "E"),
        remove("l3", "L", 3, after: "l2", "D", keeping: ["D": (2, "d2"), "Dg": (2, "g2")]),
        add("t-add", "D", 2, after: "d1", "T"),
        add("u-add", "D", 3, after: "d2", "U"),
        join("t1", "T"),
        remove("t2", "T", 2, after: "t1", "L", keeping: ["L": (2, "l2")]),
        join("u1", "U"),
        remove("u2", "U", 2, after: "u1", "L", keeping: ["L": (2, "l2")]),
    ]

    @Test("a thief's back-dated add through a removed device gives no path: its removals of L are not kept")
    func thiefBackDates() {
        let state = Self.state(Self.thief)
        #expect(state.devices == ["L", "E"])
        #expect(state.removed == ["D"])
        #expect(state.removals["D"]?.map(\.id) == ["l3"])
        #expect(state.countingRecords == ["l1", "d1", "d2", "l3"])
    }

    @Test("a removed device's group-log records count only within the frontier and on the head's chain")
    func withinTheFrontier() {
        let state = Self.state(Self.thief)
        // The group log Dg of D holds g1 ← g2 ← g3, and the thief's fork g2x (sequence 2 after g1).
        let held: [String: String?] = ["g1": nil, "g2": "g1", "g3": "g2", "g2x": "g1"]
        let previous: (String) -> String? = { held[$0] ?? nil }
        func counts(_ id: String, _ sequence: UInt64, log: String = "Dg", _ chain: (String) -> String?) -> Bool {
            state.counts(device: "D", log: log, sequence: sequence, id: id, previous: chain)
        }
        #expect(counts("g1", 1, previous))
        #expect(counts("g2", 2, previous))
        #expect(!counts("g3", 3, previous), "beyond through")
        #expect(!counts("g2x", 2, previous), "a fork at through: not the head")
        #expect(!counts("g1", 1, { $0 == "g2" ? nil : held[$0] ?? nil }), "the chain from the head is not held")
        #expect(!counts("g1", 1, log: "Dh", previous), "a log the frontier does not list keeps nothing")
        #expect(state.counts(device: "E", log: "Eg", sequence: 9, id: "e9", previous: { _ in nil }))
        #expect(!state.counts(device: "T", log: "Tg", sequence: 1, id: "t9", previous: { _ in nil }))
    }

    @Test("a mutual removal that saw the removal it answers is not cut by it: both count, both keys removed")
    func mutualRemoval() {
        let state = Self.state([
            Self.found("l1", "L"),
            Self.add("l2", "L", 2, after: "l1", "D"),
            Self.add("l3", "L", 3, after: "l2", "N"),
            Self.join("d1", "D"),
            Self.remove("l4", "L", 4, after: "l3", "D", keeping: ["D": (1, "d1")]),
            Self.remove("d2", "D", 2, after: "d1", "L", keeping: ["L": (4, "l4")]),
        ])
        #expect(state.devices == ["N"])
        #expect(state.removed == ["L", "D"])
        #expect(state.countingRecords == ["l1", "l3", "d1", "l4", "d2"])
    }
}
