import ContinuumCore
import Crypto
import Foundation
import Hummingbird

/// A linked browser's session: the requests that carry it are served with the rights of `device`, a device of
/// `account` (Docs/API.md, "Linked browsers"); a guest's (`group` set) with a guest's, in that group alone
/// (Docs/API.md, "Guests").
struct BrowserSession: Sendable, Hashable {
    let device: AuthorID
    let account: AccountID
    let expires: ContinuousClock.Instant
    /// The one group a guest's session sees and writes in; nil for a device of the owner's account.
    var group: GroupID? = nil
}

/// The sessions of linked browsers, held in memory: a browser proves it holds its device key (it signs a challenge)
/// and gets a session token in a cookie. The key never leaves the browser; a restart of the node ends every session,
/// and the browser opens a new one with its key, without the person doing anything.
actor BrowserSessions {
    /// What a browser signs to open a session: these bytes, the 32-byte nonce, then its device key.
    static let challengeContext = Array("continuum-web-session-v1".utf8)
    static let challengeLifetime: Duration = .seconds(60)
    static let sessionLifetime: Duration = .seconds(12 * 3600)
    /// At most this many challenges are waiting: a new one past it drops the oldest (so asking for many does not
    /// grow the node's memory).
    static let waitingChallenges = 256

    private var challenges: [Data: (device: AuthorID, expires: ContinuousClock.Instant)] = [:]
    private var sessions: [String: BrowserSession] = [:]
    private let clock = ContinuousClock()

    /// A new nonce for `device` to sign, valid for a minute and once.
    func challenge(for device: AuthorID) -> Data {
        let now = clock.now
        challenges = challenges.filter { $0.value.expires > now }
        if challenges.count >= Self.waitingChallenges,
            let oldest = challenges.min(by: { $0.value.expires < $1.value.expires })?.key
        {
            challenges[oldest] = nil
        }
        let nonce = Self.randomBytes(32)
        challenges[nonce] = (device, now.advanced(by: Self.challengeLifetime))
        return nonce
    }

    /// Checks `signature` of the challenge `nonce` by `device` and uses the nonce up; nil when it was not issued to
    /// that device, has expired, or the signature does not verify.
    func answer(device: AuthorID, nonce: Data, signature: Data) -> Bool {
        guard let waiting = challenges.removeValue(forKey: nonce), waiting.device == device,
            waiting.expires > clock.now,
            let key = try? Curve25519.Signing.PublicKey(rawRepresentation: device.bytes)
        else { return false }
        return key.isValidSignature(signature, for: Self.challengeContext + nonce + device.bytes)
    }

    /// Opens a session for `device` of `account` (a guest's in `group`): its token.
    func open(device: AuthorID, account: AccountID, group: GroupID? = nil) -> String {
        let now = clock.now
        sessions = sessions.filter { $0.value.expires > now }
        let token = Self.randomBytes(32).base64URL
        sessions[token] = BrowserSession(
            device: device,
            account: account,
            expires: now.advanced(by: Self.sessionLifetime),
            group: group
        )
        return token
    }

    /// The live session `token` names.
    func session(_ token: String) -> BrowserSession? {
        guard let session = sessions[token], session.expires > clock.now else { return nil }
        return session
    }

    /// A guest's write budget (Docs/API.md, "Guests"): a bucket of `writeBudget` units that fills at
    /// `writeRefill` units a second; a photo costs ``photoCost`` (its check and thumbnail), a record ``recordCost``.
    static let writeBudget = 60.0
    static let writeRefill = 1.0
    static let photoCost = 5.0
    static let recordCost = 1.0
    /// What a guest's joining costs its link's budget (a link admits 60 guests at once, then one a second).
    static let joinCost = 1.0
    private var budgets: [Data: (units: Double, at: ContinuousClock.Instant)] = [:]
    /// Past this many budgets, those that filled again are forgotten.
    static let budgetsKept = 4096

    /// Charges `device` `cost` units before the work: nil when its budget holds them (they are taken), else how
    /// long until it would.
    func charge(_ device: AuthorID, _ cost: Double) -> Duration? { charge(key: device.bytes, cost) }

    /// ``charge(_:_:)`` of the budget named `key`: a device's key, or a guest link's id.
    func charge(key: Data, _ cost: Double) -> Duration? {
        let now = clock.now
        if budgets.count >= Self.budgetsKept {
            // A budget that has filled again is as good as none: forgotten, so that many keys do not grow memory.
            let full = Self.writeBudget / Self.writeRefill
            budgets = budgets.filter { $0.value.at.duration(to: now) < .seconds(full) }
        }
        let last = budgets[key] ?? (Self.writeBudget, now)
        let elapsed =
            Double(last.at.duration(to: now).components.seconds)
            + Double(last.at.duration(to: now).components.attoseconds) / 1e18
        let units = min(Self.writeBudget, last.units + elapsed * Self.writeRefill)
        guard units >= cost else {
            budgets[key] = (units, now)
            return .milliseconds(Int64((cost - units) / Self.writeRefill * 1000))
        }
        budgets[key] = (units - cost, now)
        return nil
    }

    /// Ends the session `token` names.
    func close(_ token: String) { sessions[token] = nil }

    /// Ends every session of `device` (it was removed from its account, or as a guest). Their tokens are kept (the
    /// latest ``endedKept``), so that the browser's next requests are told why, not asked for a token.
    func end(device: AuthorID) {
        for (token, session) in sessions where session.device == device {
            ended[token] = session.group != nil
            endedOrder.append(token)
        }
        while endedOrder.count > Self.endedKept { ended[endedOrder.removeFirst()] = nil }
        sessions = sessions.filter { $0.value.device != device }
    }

    /// How many ended sessions' tokens are kept.
    static let endedKept = 1024
    private var ended: [String: Bool] = [:]
    private var endedOrder: [String] = []

    /// Whether `token` was a session ended because its device was removed: nil when not; else whether it was a
    /// guest's.
    func endedByRemoval(_ token: String) -> Bool? { ended[token] }

    private static func randomBytes(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The session token a request carries: its `Authorization: Browser <token>` header, else its cookie.
    static func token(of request: Request) -> String? {
        if let header = request.headers[.authorization], header.hasPrefix("Browser ") {
            return String(header.dropFirst("Browser ".count))
        }
        return request.cookies[cookieName(request.head.authority ?? "")]?.value
    }

    /// The session cookie's name for the address the browser opened (one per port, as the token's).
    static func cookieName(_ authority: String) -> String {
        AccessMiddleware<BasicRequestContext>.cookieName(authority).replacingOccurrences(
            of: "continuum-token",
            with: "continuum-browser"
        )
    }
}

extension Data {
    /// Base64url without padding (RFC 4648 §5).
    public var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes base64url, with or without padding; nil when it is not.
    public init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
