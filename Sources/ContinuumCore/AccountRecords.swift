import Crypto
import Foundation

/// An account: a person, whatever devices they use. Its id is the record id of the `account` record that founded it
/// (kind 8, design note §V1).
public struct AccountID: Identifier32 {
    public let bytes: Data
    public init(unchecked bytes: Data) { self.bytes = bytes }
    /// The account a founding record founds.
    public init(founding record: RecordID) { bytes = record.bytes }
}

/// What a removal keeps of one log of the removed device: its records up to `through`, on the chain that ends at
/// `head` (the id of the record at `through`; nil when `through` is 0).
public struct FrontierEntry: Sendable, Hashable {
    public var log: AuthorID
    public var through: UInt64
    public var head: RecordID?

    public init(log: AuthorID, through: UInt64, head: RecordID?) {
        self.log = log
        self.through = through
        self.head = head
    }
}

/// The records of an account log (kinds 8 … 11, design note §V2.3, §V3.1), laid out as every kind from 8 on
/// (PROTOCOL.md §2.8): no `context`, the fields in `data`, no content. A record of these kinds whose `data` breaks
/// the layout below is valid but inert (``init(_:author:)`` gives nil), as a reaction that breaks its rules is.
///
/// ```
/// account        (8)   account 32 (zeros: founds it) · flags u8 (bit 0: a recovery key follows; founding only) ·
///                      recovery 32 when bit 0
/// device-add     (9)   account 32 · device 32 (≠ author) · consent 64: the device's signature over
///                      "continuum-device-consent-v3" · account · device
/// device-remove  (10)  account 32 · device 32 · count u8 (0 … 55) · count × (log 32 · through u64 · head 32),
///                      logs strictly ascending; head all zeros exactly when through is 0
/// log            (11)  account 32 · group 32 · log 32 (≠ author) · signature 64: the log key's signature over
///                      "continuum-log-declaration-v3" · account · group · device (the author)
/// ```
public enum AccountRecord: Sendable, Hashable {
    /// Founds an account: its author is the founding device; `recovery` is the recovery key, if the person kept a
    /// recovery code.
    case founding(recovery: AuthorID?)
    /// The first record of a linked device's (or the recovery key's) account log: it names the account, and gives
    /// nothing by itself.
    case joining(AccountID)
    /// Adds `device` to `account`, with the device's own consent.
    case deviceAdd(account: AccountID, device: AuthorID, consent: Data)
    /// Removes `device` from `account`, keeping what `frontier` names of its logs.
    case deviceRemove(account: AccountID, device: AuthorID, frontier: [FrontierEntry])
    /// Declares that the author's log `log` in `group` is the account's: the device's log there, which counts for
    /// the account while the device is one of its devices (PROTOCOL.md §2.10). Both keys sign it: the device the
    /// record, the log key `signature`.
    case logDeclaration(account: AccountID, group: GroupID, log: AuthorID, signature: Data)

    public static let accountCode: UInt8 = 8
    public static let deviceAddCode: UInt8 = 9
    public static let deviceRemoveCode: UInt8 = 10
    public static let logDeclarationCode: UInt8 = 11
    /// The most logs a removal's frontier lists: 55 entries fill the 4,096 bytes of `data` (65 + 72 × 55 = 4,025).
    public static let frontierEntries = 55

    /// The bytes a new device signs to consent to being added to `account`.
    public static func consentMessage(account: AccountID, device: AuthorID) -> Data {
        Data("continuum-device-consent-v3".utf8) + account.bytes + device.bytes
    }

    /// The bytes a log key signs to declare itself the log of `device` in `group` for `account`.
    public static func declarationMessage(account: AccountID, group: GroupID, device: AuthorID) -> Data {
        Data("continuum-log-declaration-v3".utf8) + account.bytes + group.bytes + device.bytes
    }

    /// The account a record names: the founded one (`founding`: its own id), or the one its fields name.
    public func account(foundedBy record: RecordID) -> AccountID {
        switch self {
        case .founding: AccountID(founding: record)
        case .joining(let account), .deviceAdd(let account, _, _), .deviceRemove(let account, _, _),
            .logDeclaration(let account, _, _, _):
            account
        }
    }

    /// The record body that carries it.
    public var body: RecordBody {
        var data = Data()
        let code: UInt8
        switch self {
        case .founding(let recovery):
            code = Self.accountCode
            data += Data(count: 32) + [recovery == nil ? 0 : 1] + (recovery?.bytes ?? Data())
        case .joining(let account):
            code = Self.accountCode
            data += account.bytes + [0]
        case .deviceAdd(let account, let device, let consent):
            code = Self.deviceAddCode
            data += account.bytes + device.bytes + consent
        case .deviceRemove(let account, let device, let frontier):
            code = Self.deviceRemoveCode
            data += account.bytes + device.bytes + [UInt8(frontier.count)]
            for entry in frontier {
                var through = entry.through.bigEndian
                data += entry.log.bytes + Data(bytes: &through, count: 8) + (entry.head?.bytes ?? Data(count: 32))
            }
        case .logDeclaration(let account, let group, let log, let signature):
            code = Self.logDeclarationCode
            data += account.bytes + group.bytes + log.bytes + signature
        }
        return .opaque(OpaqueReferences(code: code, context: nil, data: Array(data)), payload: [])
    }

    /// Reads an account record signed by `author`; nil for another kind, or for one that breaks its kind's rules (it
    /// is then inert): a bad layout, a joining record naming no account, an add of the author itself or without the
    /// added device's consent, a frontier out of order, a log declaration without the log key's signature.
    ///
    /// `verifying`: false only for a record read back from where it was stored after this same check passed (its
    /// signatures are then not checked again: the account rule reads every record of an account at each new one).
    public init?(_ body: RecordBody, author: AuthorID, verifying: Bool = true) {
        guard case .opaque(let references, let payload) = body, references.context == nil, payload.isEmpty else {
            return nil
        }
        let data = Data(references.data)
        switch references.code {
        case Self.accountCode: self.init(account: data)
        case Self.deviceAddCode: self.init(add: data, author: author, verifying: verifying)
        case Self.deviceRemoveCode: self.init(remove: data)
        case Self.logDeclarationCode: self.init(declaration: data, author: author, verifying: verifying)
        default: return nil
        }
    }

    private init?(account data: Data) {
        guard data.count == 33 || data.count == 65 else { return nil }
        let account = data.prefix(32)
        let flags = data[data.startIndex + 32]
        if account.allSatisfy({ $0 == 0 }) {
            guard (flags == 0 && data.count == 33) || (flags == 1 && data.count == 65) else { return nil }
            self = .founding(recovery: flags == 1 ? AuthorID(unchecked: Data(data.suffix(32))) : nil)
        } else {
            guard flags == 0, data.count == 33 else { return nil }
            self = .joining(AccountID(unchecked: Data(account)))
        }
    }

    private init?(add data: Data, author: AuthorID, verifying: Bool) {
        guard data.count == 128 else { return nil }
        let account = AccountID(unchecked: Data(data.prefix(32)))
        let device = AuthorID(unchecked: Data(data.dropFirst(32).prefix(32)))
        let consent = Data(data.suffix(64))
        guard device != author, !account.bytes.allSatisfy({ $0 == 0 }) else { return nil }
        // A device id that is no Ed25519 key cannot have signed a consent: inert, as a consent that does not verify.
        if verifying {
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: device.bytes),
                key.isValidSignature(consent, for: Self.consentMessage(account: account, device: device))
            else { return nil }
        }
        self = .deviceAdd(account: account, device: device, consent: consent)
    }

    private init?(declaration data: Data, author: AuthorID, verifying: Bool) {
        guard data.count == 160 else { return nil }
        let account = AccountID(unchecked: Data(data.prefix(32)))
        let group = GroupID(unchecked: Data(data.dropFirst(32).prefix(32)))
        let log = AuthorID(unchecked: Data(data.dropFirst(64).prefix(32)))
        let signature = Data(data.suffix(64))
        guard log != author, !account.bytes.allSatisfy({ $0 == 0 }), !group.bytes.allSatisfy({ $0 == 0 }) else {
            return nil
        }
        // A log id that is no Ed25519 key cannot have signed: inert, as a signature that does not verify.
        if verifying {
            let message = Self.declarationMessage(account: account, group: group, device: author)
            guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: log.bytes),
                key.isValidSignature(signature, for: message)
            else { return nil }
        }
        self = .logDeclaration(account: account, group: group, log: log, signature: signature)
    }

    private init?(remove data: Data) {
        guard data.count >= 65 else { return nil }
        let account = AccountID(unchecked: Data(data.prefix(32)))
        let device = AuthorID(unchecked: Data(data.dropFirst(32).prefix(32)))
        let count = Int(data[data.startIndex + 64])
        guard count <= Self.frontierEntries, data.count == 65 + 72 * count, !account.bytes.allSatisfy({ $0 == 0 })
        else { return nil }
        var frontier: [FrontierEntry] = []
        for index in 0..<count {
            let entry = data.dropFirst(65 + 72 * index).prefix(72)
            let log = AuthorID(unchecked: Data(entry.prefix(32)))
            let through = entry.dropFirst(32).prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let head = Data(entry.suffix(32))
            let zero = head.allSatisfy { $0 == 0 }
            guard through <= Limits.maxSequence, zero == (through == 0),
                frontier.last.map({ $0.log < log }) ?? true
            else { return nil }
            frontier.append(FrontierEntry(log: log, through: through, head: zero ? nil : RecordID(unchecked: head)))
        }
        self = .deviceRemove(account: account, device: device, frontier: frontier)
    }
}

extension NodeIdentity {
    /// This device's consent to being added to `account`: what a device that links it puts in its device-add.
    public func consent(toJoin account: AccountID) throws -> Data {
        try privateKey.signature(for: AccountRecord.consentMessage(account: account, device: author))
    }

    /// This log key's half of a log declaration: its signature that it is `device`'s log in `group` for `account`.
    public func declaration(account: AccountID, group: GroupID, device: AuthorID) throws -> Data {
        try privateKey.signature(for: AccountRecord.declarationMessage(account: account, group: group, device: device))
    }
}

extension AccountEvent where Key == AuthorID, ID == RecordID {
    /// The account rule's view of a verified record of an account log; nil for any other record, a header alone, or
    /// an inert one.
    public init?(_ record: VerifiedRecord) { self.init(record.record) }

    /// The same, for a record whose signature was checked when it was stored; `verifying` as for
    /// ``AccountRecord/init(_:author:verifying:)``.
    public init?(_ record: SignedRecord, verifying: Bool = true) {
        guard let body = record.body,
            let account = AccountRecord(body, author: record.header.author, verifying: verifying)
        else { return nil }
        let change: AccountChange<AuthorID, RecordID>
        switch account {
        case .founding: change = .found
        case .joining: change = .join
        case .logDeclaration: change = .declare
        case .deviceAdd(_, let device, _): change = .add(device: device)
        case .deviceRemove(_, let device, let frontier):
            change = .remove(
                device: device,
                frontier: Dictionary(
                    frontier.map { ($0.log, AccountFrontierEntry(through: $0.through, head: $0.head)) },
                    uniquingKeysWith: { first, _ in first }
                )
            )
        }
        self.init(
            id: record.id,
            author: record.header.author,
            sequence: record.header.sequence,
            previous: record.header.previous,
            change: change
        )
    }
}

extension AccountRules {
    /// The state of `account` from the records held, in any order: those of its account logs count, any other is
    /// left out. Nil while the record that founds it is not among them.
    public static func state(
        of account: AccountID,
        from records: [VerifiedRecord]
    ) -> AccountState<AuthorID, RecordID>? {
        state(of: account, from: records.map(\.record))
    }

    /// The same, from records whose signatures were checked when they were stored. `verifying`: false when every
    /// record was also read as an account record when it was stored (its consent or declaration checked then).
    public static func state(
        of account: AccountID,
        from records: [SignedRecord],
        verifying: Bool = true
    ) -> AccountState<AuthorID, RecordID>? {
        var founder: AuthorID?
        var recovery: AuthorID?
        var events: [AccountEvent<AuthorID, RecordID>] = []
        for record in records {
            guard let body = record.body,
                let parsed = AccountRecord(body, author: record.header.author, verifying: verifying),
                parsed.account(foundedBy: record.id) == account, let event = AccountEvent(record, verifying: verifying)
            else { continue }
            if case .founding(let key) = parsed, record.header.sequence == 1 {
                founder = record.header.author
                recovery = key
            }
            events.append(event)
        }
        guard let founder else { return nil }
        return state(of: events, founder: founder, recovery: recovery)
    }
}
