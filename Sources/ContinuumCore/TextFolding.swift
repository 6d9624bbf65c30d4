import Foundation

/// The text form that search compares: lower case, with diacritics removed ("Café" → "cafe").
public enum TextFolding {
    /// Decomposes (NFD), drops combining marks, and lowercases. Deterministic on every platform.
    public static func fold(_ text: String) -> String {
        // ASCII, the common case, has nothing to decompose and no marks: lower case alone, without Foundation's
        // normalization (which cost a sixth of storing a post).
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            return String(decoding: text.utf8.map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 }, as: UTF8.self)
        }
        var scalars = String.UnicodeScalarView()
        for scalar in text.decomposedStringWithCanonicalMapping.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .spacingMark: continue
            default: scalars.append(scalar)
            }
        }
        return String(scalars).lowercased()
    }
}
