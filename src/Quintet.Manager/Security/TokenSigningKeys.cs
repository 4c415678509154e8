using System.Security.Cryptography;
using Microsoft.IdentityModel.Tokens;
using Quintet.Manager.Configuration;
using Quintet.Security;

namespace Quintet.Manager.Security;

/// <summary>Reads <see cref="JwtOptions.SigningKeys"/>: base64 HMAC secrets, or paths of PEM public keys (RSA or ECDSA).</summary>
internal static class TokenSigningKeys
{
    /// <summary>The shortest HMAC-SHA256 secret accepted: as long as the hash, below which a secret is guessable.</summary>
    public const int MinimumSecretBytes = 32;

    /// <summary>Reads every key.</summary>
    /// <exception cref="ConfigurationErrorException">A key is neither a long enough base64 secret nor a readable PEM public key file.</exception>
    public static IReadOnlyList<SecurityKey> Read(JwtOptions options)
    {
        var failures = new List<string>();
        var keys = new List<SecurityKey>();
        for (var i = 0; i < options.SigningKeys.Count; i++)
        {
            var setting = $"{SecurityOptions.SectionName}:Jwt:SigningKeys:{i}";
            try
            {
                keys.Add(ReadOne(options.SigningKeys[i]));
            }
            catch (Exception e) when (e is FormatException or IOException or UnauthorizedAccessException or CryptographicException or ArgumentException)
            {
                failures.Add($"{setting}: {e.Message}");
            }
        }

        return failures.Count > 0 ? throw new ConfigurationErrorException(failures) : keys;
    }

    private static SecurityKey ReadOne(string key)
    {
        var buffer = new byte[key.Length];
        if (Convert.TryFromBase64String(key.Trim(), buffer, out var length))
        {
            return length >= MinimumSecretBytes
                ? new SymmetricSecurityKey(buffer[..length])
                : throw new FormatException($"the HMAC secret is {length} bytes; use at least {MinimumSecretBytes} random bytes, base64-encoded (openssl rand -base64 32).");
        }

        if (!File.Exists(key))
        {
            throw new FormatException($"'{key}' is neither a base64 HMAC secret nor the path of a PEM public key file that exists.");
        }

        var pem = File.ReadAllText(key);
        var rsa = RSA.Create();
        try
        {
            rsa.ImportFromPem(pem);
            return new RsaSecurityKey(rsa);
        }
        catch (ArgumentException)
        {
            // Not an RSA key; an ECDSA key is the other kind accepted.
            rsa.Dispose();
        }

        var ecdsa = ECDsa.Create();
        try
        {
            ecdsa.ImportFromPem(pem);
        }
        catch (ArgumentException)
        {
            ecdsa.Dispose();
            throw new FormatException($"'{key}' holds no PEM RSA or ECDSA public key.");
        }

        return new ECDsaSecurityKey(ecdsa);
    }
}
