/// The account rule of protocol v3 (design note §V3.4, §V3.5): the devices of an account, its removed keys and the
/// frontiers that bound them, as a pure function of the account's records. It reads only the set of records, never
/// their order, so every node that holds the same records computes the same state.
///
/// The types are generic over the key and the record id. A key is any signing key that names the log it signs: a
/// device key names its account log, a log key its group log, and a frontier lists logs by these keys, so one key
/// type serves both (the node will use a 32-byte public key and `RecordID`). Being generic keeps this file free of
/// encodings the wire format has not fixed yet, and lets the tests run `Resources/account-scenarios.json`, whose
/// keys are short names ("L", "D", "k"), without a table from names to bytes.
///
/// The rule as implemented (f is the founder, k the recovery key; `scripts/account_rules.py` models the same text
/// independently):
/// - A record x of log ℓ is **within** removal R when R's frontier lists ℓ, x's sequence is at most `through`, and
///   walking `previous` back from `head`, every record down to x's sequence is held and the one reached is x.
/// - R **cuts** a record of its target that is not within R, except a removal, signed by R's target, of R's author
///   (a mutual removal).
/// - **Add paths** are walks of adds from f or k; an add of f or k adds nothing. What a removed key added within
///   the frontier keeps its path. The **ancestors** of x are the keys other than x without whose adds x has no
///   path.
/// - Removals signed by k or by a key with an add path are kept; a removal naming k is inert.
/// - R **depends on** S when S cuts R or S cuts an add on a path of R's author, but not when R's target is an
///   ancestor of S's author and R cuts an add on a path of S's author: authority that flows through the removed key,
///   and that the removal cuts, cannot save that key from its remover.
/// - R counts when signed by k; otherwise when no counting removal R depends on, outside R's strongly connected
///   component, cuts R, and R's author keeps an add path that neither those removals nor R itself cut.
/// - **Removed** are the targets of counting removals; **devices** are f and the added keys (not k) with an add path
///   that no counting removal cuts, less the removed.
public enum AccountRules {
    /// The state of the account whose founding device is `founder` and whose recovery key (if any) is `recovery`,
    /// from its held account records in any order. Records with one id are one record (an id is a hash).
    public static func state<Key, ID>(
        of records: [AccountEvent<Key, ID>],
        founder: Key,
        recovery: Key?
    ) -> AccountState<Key, ID> {
        let graph = AccountGraph(records: records, founder: founder, recovery: recovery)
        let counting = graph.countingRemovals()
        let removed = Set(counting.compactMap(\.removal?.device))
        let cut = graph.adds.filter { add in counting.contains { graph.cuts(add, by: $0) } }.map(\.id)
        let cleared = graph.reached(from: graph.roots, skipping: Set(cut))
        var keys = Set(graph.adds.compactMap(\.added))
        keys.insert(founder)
        if let recovery { keys.remove(recovery) }
        var countingRemovals: [Key: Set<AccountEvent<Key, ID>>] = [:]
        for removal in counting {
            if let device = removal.removal?.device { countingRemovals[device, default: []].insert(removal) }
        }
        let others = graph.events.values.filter { event in
            event.removal == nil && cleared.contains(event.author)
                && !counting.contains { graph.cuts(event, by: $0) }
                && !(event.added.map(removed.contains) ?? false)
        }
        return AccountState(
            devices: keys.intersection(cleared).subtracting(removed),
            removed: removed,
            removals: countingRemovals,
            countingRecords: Set(counting.map(\.id) + others.map(\.id)),
            authorised: cleared
        )
    }
}

/// One entry of a removal's frontier: the last sequence of a log that stays valid and the id of the record there
/// (nil when `through` is 0).
public struct AccountFrontierEntry<ID: Hashable & Sendable>: Hashable, Sendable {
    /// The last sequence of the log that stays valid.
    public var through: UInt64
    /// The id of the record at `through`; nil when `through` is 0.
    public var head: ID?

    /// An entry keeping `through` records of a log, the last of which has the id `head`.
    public init(through: UInt64, head: ID?) {
        self.through = through
        self.head = head
    }
}

/// What an account record does (§V2.3 kinds 8 … 11; a profile changes no device and is left out).
public enum AccountChange<Key: Hashable & Sendable, ID: Hashable & Sendable>: Hashable, Sendable {
    /// The `account` record founding the account (the founder's first record).
    case found
    /// The `account` record joining the account: it gives nothing by itself.
    case join
    /// A `device-add` of `device`, with a valid consent (checked where the record is verified).
    case add(device: Key)
    /// A `device-remove` of `device`, keeping of each listed log of `device` what the frontier names.
    case remove(device: Key, frontier: [Key: AccountFrontierEntry<ID>])
    /// A `log` record declaring one of the author's group logs: nothing to the devices, but a record of the account
    /// log all the same, which a removal's frontier counts.
    case declare
}

/// An account record as the rule needs it: its id, its author, where it sits in the author's account log, and
/// what it does.
public struct AccountEvent<Key: Hashable & Sendable, ID: Hashable & Sendable>: Hashable, Sendable {
    /// The record's id.
    public var id: ID
    /// The key that signed it; its account log is named by this key.
    public var author: Key
    /// The record's sequence in the author's account log, from 1.
    public var sequence: UInt64
    /// The id of the record at `sequence - 1` of the same log; nil at sequence 1.
    public var previous: ID?
    /// What the record does.
    public var change: AccountChange<Key, ID>

    /// An account record `id`, signed by `author` at `sequence` after `previous`, doing `change`.
    public init(id: ID, author: Key, sequence: UInt64, previous: ID?, change: AccountChange<Key, ID>) {
        self.id = id
        self.author = author
        self.sequence = sequence
        self.previous = previous
        self.change = change
    }

    /// The key this record adds, when it is an add.
    var added: Key? {
        if case .add(let device) = change { device } else { nil }
    }

    /// The key this record removes and the frontier it keeps, when it is a removal.
    var removal: (device: Key, frontier: [Key: AccountFrontierEntry<ID>])? {
        if case .remove(let device, let frontier) = change { (device, frontier) } else { nil }
    }
}

/// The state of an account under the account rule: which keys are its devices now, which are removed for good, and
/// what of a removed device's records still counts.
public struct AccountState<Key: Hashable & Sendable, ID: Hashable & Sendable>: Hashable, Sendable {
    /// The account's devices: the founder and added keys with an add path no counting removal cuts, not removed.
    /// Never the recovery key, which no device holds.
    public let devices: Set<Key>
    /// The targets of counting removals. A removed key never becomes a device again.
    public let removed: Set<Key>
    /// The counting removals of each removed key: a record of that key counts only within every one of them.
    public let removals: [Key: Set<AccountEvent<Key, ID>>]
    /// The ids of the account records that count: the counting removals, and every other record whose author is
    /// authorised, that no counting removal cuts and that does not add a removed key.
    public let countingRecords: Set<ID>
    /// The keys with an add path that no counting removal cuts, removed or not, the founder and recovery key included.
    let authorised: Set<Key>

    /// Whether the record `id` at `sequence` of the log `log`, signed for `device`, counts (§V3.3, §V3.4): the device
    /// has an add path that no counting removal cuts, and the record is within every counting removal of the device.
    /// `previous` gives, for the id of a held record of `log`, the id of the record before it; nil when that record
    /// is not held. The record itself need not be held when its sequence is some frontier's `through`.
    public func counts(
        device: Key,
        log: Key,
        sequence: UInt64,
        id: ID,
        previous: (ID) -> ID?
    ) -> Bool {
        guard authorised.contains(device) else { return false }
        return (removals[device] ?? []).allSatisfy { removal in
            guard let frontier = removal.removal?.frontier else { return false }
            return AccountGraph<Key, ID>.within(
                log: log,
                sequence: sequence,
                id: id,
                frontier: frontier,
                previous: previous
            )
        }
    }
}
