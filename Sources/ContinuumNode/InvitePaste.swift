import ContinuumCore
import Foundation

extension InviteCode {
    /// The invite code in what a person pasted or typed: the code itself, or the address an invite's QR code holds,
    /// the inviting node's web page with `#invite=CODE` (a phone's camera opens it; a node joins with it too).
    public static func pasted(_ text: String) -> String {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let fragment = trimmed.range(of: "#invite=") else { return trimmed }
        return String(trimmed[fragment.upperBound...])
    }
}
