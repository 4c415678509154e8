using Quintet.Testing;

namespace Quintet.Client.Tests;

/// <summary>docs/configuration.md's <c>Quintet:Client</c> table against <see cref="QuintetClientOptions"/>.</summary>
public sealed class ConfigurationReferenceTests
{
    [Fact]
    public void Every_client_option_that_configuration_can_set_is_documented_with_its_default_and_nothing_else_is()
    {
        SettingsReference.Check("Quintet:Client", typeof(QuintetClientOptions));
    }
}
