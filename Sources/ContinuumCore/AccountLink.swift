import Foundation

/// A new device's check of the account it is asked to join (PROTOCOL.md §7.8.19): the LINKING's records must found
/// one account, of which the device that made the link code is a device.
public enum AccountLink {
    /// The account `records` found, when `linker` is one of its devices by them; throws the reason otherwise (a record
    /// that does not verify, not exactly one founding record, a linker that is no device).
    public static func account(of records: [[UInt8]], linker: AuthorID) throws(AccountLinkError) -> AccountID {
        let verified = try verify(records)
        let foundings = Self.foundings(in: verified)
        guard foundings.count == 1, let founding = foundings.first?.record else {
            throw AccountLinkError("the account's records hold \(foundings.count) founding records, not one")
        }
        let account = AccountID(founding: founding.id)
        guard let state = AccountRules.state(of: account, from: verified), state.devices.contains(linker) else {
            throw AccountLinkError("the device that made the link code is not a device of the account it names")
        }
        return account
    }

    /// The records, each verified; throws naming the first that is not valid.
    static func verify(_ records: [[UInt8]]) throws(AccountLinkError) -> [VerifiedRecord] {
        var verified: [VerifiedRecord] = []
        for bytes in records {
            do {
                verified.append(try SignedRecord(bytes: bytes).verify())
            } catch {
                throw AccountLinkError("a record of the account is not valid: \(error)")
            }
        }
        return verified
    }

    /// The founding records among `verified` (an `account` record founding one, at sequence 1), with their recovery
    /// keys.
    static func foundings(in verified: [VerifiedRecord]) -> [(record: VerifiedRecord, recovery: AuthorID?)] {
        verified.compactMap { record in
            guard record.header.sequence == 1, let body = record.record.body,
                case .founding(let recovery) = AccountRecord(body, author: record.header.author)
            else { return nil }
            return (record, recovery)
        }
    }
}

/// Why a LINKING or LINKED does not hold, for a person.
public struct AccountLinkError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}

/// A new device's check of the account it recovers (PROTOCOL.md §7.8.20): the LINKING's records must found one
/// account, with the recovery key the device holds.
public enum AccountRecovery {
    /// The account `records` found, and its state by them, when its recovery key is `recovery`; throws the reason
    /// otherwise.
    public static func account(
        of records: [[UInt8]],
        recovery: AuthorID
    ) throws(AccountLinkError) -> (AccountID, AccountState<AuthorID, RecordID>) {
        let verified = try AccountLink.verify(records)
        let foundings = AccountLink.foundings(in: verified).filter { $0.recovery == recovery }
        guard foundings.count == 1, let founding = foundings.first?.record else {
            throw AccountLinkError("the records sent found no account with this recovery code")
        }
        let account = AccountID(founding: founding.id)
        guard let state = AccountRules.state(of: account, from: verified) else {
            throw AccountLinkError("the account's records give it no state")
        }
        return (account, state)
    }
}
